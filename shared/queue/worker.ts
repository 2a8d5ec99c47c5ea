import { processPartialResponse, SqsFifoPartialProcessorAsync } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { z } from 'zod';
import { newBatchScope, runRecord } from '../batch-scope.js';
import { config } from '../context.js';
import { parseWith } from '../domain/validation.js';
import { logger } from '../log/logger.js';
import { observeOperation } from '../metrics/operations.js';
import { withReadSnapshot } from '../store/read-snapshot.js';

export interface FifoWorker<M> {
  /** What a record is measured as (operations.ts): `service reconcile`, `fog reconcile`. */
  operation: string;
  /** The message shape on the queue. */
  message: z.ZodType<M>;
  /** Converges what the message names. */
  reconcile: (message: M) => Promise<void>;
  /** How a failure is logged: a message and the fields that name the key. */
  describe: (message: M) => [string, Record<string, unknown>];
  /** Runs on the last delivery before the DLQ, so the reason is left where the user looks for it. */
  onLastDelivery?: (message: M, error: unknown) => Promise<void>;
  /**
   * The items the batch's records will read, read together before the first record runs (one batch
   * read for the whole batch instead of one per record; see withReadSnapshot).
   */
  prefetch?: {
    operation: string;
    keys: (messages: readonly M[]) => { PK: string; SK: string }[];
  };
  /**
   * Runs the batch's groups side by side (each group's records still one after another): for records
   * that are a call or two each, like a fan-out's, so a batch takes as long as its slowest record; and
   * for records that queue on one lock, like services on the hub, so they share its holds.
   */
  groupsInParallel?: boolean;
}

/**
 * A FIFO reconcile queue's Lambda handler: one key per record, reported as partial batch failures;
 * once a record of a group fails, every later record of that group is reported failed too (Powertools'
 * FIFO processor), so a group is never processed out of order.
 */
export function fifoWorker<M>(worker: FifoWorker<M>) {
  const processRecord = async (record: { body: string; attributes: { ApproximateReceiveCount: string } }) => {
    const message = parseWith(worker.message, JSON.parse(record.body));
    try {
      await observeOperation(worker.operation, () => worker.reconcile(message));
    } catch (error) {
      const [text, fields] = worker.describe(message);
      logger.warn(text, { ...fields, error: error as Error });
      if (Number(record.attributes.ApproximateReceiveCount) >= config().maxReceiveCount) {
        await worker.onLastDelivery?.(message, error);
      }
      throw error;
    }
  };
  return async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
    // A processor of its own for each group of each invocation: outside Lambda Powertools keeps a
    // processor's state on the instance, and the embedded runtime runs a handler's batches concurrently.
    const processGroup = (records: SQSRecord[], handle: typeof processRecord = processRecord) =>
      processPartialResponse({ Records: records }, handle, new SqsFifoPartialProcessorAsync(), {
        context,
        skipGroupOnError: true,
        throwOnFullBatchFailure: false,
      });
    const processAll = async (): Promise<SQSBatchResponse> => {
      if (!worker.groupsInParallel) return processGroup(event.Records);
      // The records running side by side are one batch scope: work they share waits for all of them.
      const scope = newBatchScope();
      const inScope: typeof processRecord = (record) => runRecord(scope, () => processRecord(record));
      const groups = new Map<string, SQSRecord[]>();
      for (const record of event.Records) {
        const group = record.attributes.MessageGroupId ?? record.messageId;
        groups.set(group, [...(groups.get(group) ?? []), record]);
      }
      const responses = await Promise.all(
        [...groups.values()].map((records) => processGroup(records, inScope)),
      );
      return { batchItemFailures: responses.flatMap((response) => response.batchItemFailures) };
    };
    const { prefetch } = worker;
    if (!prefetch) return processAll();
    const messages = event.Records.flatMap((record) => {
      const parsed = worker.message.safeParse(safeJson(record.body));
      return parsed.success ? [parsed.data] : [];
    });
    const itemKeys = dedupeKeys(prefetch.keys(messages));
    if (itemKeys.length === 0) return processAll();
    // Measured as an operation of its own: each record's operation inside it measures its own calls.
    return observeOperation(prefetch.operation, () =>
      withReadSnapshot(itemKeys, processAll, {
        onReadFailed: (error) => logger.warn('batch read failed; records read for themselves', { error }),
      }),
    );
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Each key once, at most ten BatchGetItems' worth (read in parallel): a batch of ten agents' first
 * reconciles reads some three hundred. Records whose keys were left out read them.
 */
function dedupeKeys(itemKeys: { PK: string; SK: string }[]): { PK: string; SK: string }[] {
  const seen = new Map(itemKeys.map((key) => [`${key.PK}\u0000${key.SK}`, key]));
  return [...seen.values()].slice(0, 1_000);
}
