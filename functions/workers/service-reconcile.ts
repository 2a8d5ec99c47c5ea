import { processPartialResponse, SqsFifoPartialProcessorAsync } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { config } from '../../shared/context.js';
import { parseWith } from '../../shared/domain/validation.js';
import { logger } from '../../shared/log/logger.js';
import { serviceReconcileMessage } from '../../shared/queue/messages.js';
import { reconcileService, recordServiceFailure } from '../../shared/reconcile/service.js';

const processor = new SqsFifoPartialProcessorAsync();

async function processRecord(record: SQSRecord): Promise<void> {
  const message = parseWith(serviceReconcileMessage, JSON.parse(record.body));
  try {
    await reconcileService(message);
  } catch (error) {
    logger.warn('service reconcile failed', { service: message.name, error: error as Error });
    // On the last delivery before the DLQ, leave the reason where the user looks for it.
    if (Number(record.attributes.ApproximateReceiveCount) >= config().maxReceiveCount) {
      await recordServiceFailure(message.name, error);
    }
    throw error;
  }
}

/** service-reconcile.fifo consumer: one service per record; a failed record fails the rest of its group. */
export const handler = (event: SQSEvent, context: Context): Promise<SQSBatchResponse> =>
  processPartialResponse(event, processRecord, processor, {
    context,
    skipGroupOnError: true,
    throwOnFullBatchFailure: false,
  });
