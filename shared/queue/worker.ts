import { processPartialResponse, SqsFifoPartialProcessorAsync } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { z } from 'zod';
import { config } from '../context.js';
import { parseWith } from '../domain/validation.js';
import { logger } from '../log/logger.js';

export interface FifoWorker<M> {
  /** The message shape on the queue. */
  message: z.ZodType<M>;
  /** Converges what the message names. */
  reconcile: (message: M) => Promise<void>;
  /** How a failure is logged: a message and the fields that name the key. */
  describe: (message: M) => [string, Record<string, unknown>];
  /** Runs on the last delivery before the DLQ, so the reason is left where the user looks for it. */
  onLastDelivery?: (message: M, error: unknown) => Promise<void>;
}

/**
 * A FIFO reconcile queue's Lambda handler: one key per record, reported as partial batch failures;
 * once a record of a group fails, every later record of that group is reported failed too (Powertools'
 * FIFO processor), so a group is never processed out of order.
 */
export function fifoWorker<M>(worker: FifoWorker<M>) {
  const processor = new SqsFifoPartialProcessorAsync();
  const processRecord = async (record: { body: string; attributes: { ApproximateReceiveCount: string } }) => {
    const message = parseWith(worker.message, JSON.parse(record.body));
    try {
      await worker.reconcile(message);
    } catch (error) {
      const [text, fields] = worker.describe(message);
      logger.warn(text, { ...fields, error: error as Error });
      if (Number(record.attributes.ApproximateReceiveCount) >= config().maxReceiveCount) {
        await worker.onLastDelivery?.(message, error);
      }
      throw error;
    }
  };
  return (event: SQSEvent, context: Context): Promise<SQSBatchResponse> =>
    processPartialResponse(event, processRecord, processor, {
      context,
      skipGroupOnError: true,
      throwOnFullBatchFailure: false,
    });
}
