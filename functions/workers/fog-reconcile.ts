import { processPartialResponse, SqsFifoPartialProcessorAsync } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { parseWith } from '../../shared/domain/validation.js';
import { logger } from '../../shared/log/logger.js';
import { fogReconcileMessage } from '../../shared/queue/messages.js';
import { reconcileFog } from '../../shared/reconcile/fog.js';

const processor = new SqsFifoPartialProcessorAsync();

async function processRecord(record: SQSRecord): Promise<void> {
  const message = parseWith(fogReconcileMessage, JSON.parse(record.body));
  try {
    await reconcileFog(message);
  } catch (error) {
    logger.warn('router reconcile failed', { routerKey: message.routerKey, error: error as Error });
    throw error;
  }
}

/** fog-reconcile.fifo consumer: one router per record. */
export const handler = (event: SQSEvent, context: Context): Promise<SQSBatchResponse> =>
  processPartialResponse(event, processRecord, processor, {
    context,
    skipGroupOnError: true,
    throwOnFullBatchFailure: false,
  });
