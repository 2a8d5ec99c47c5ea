import { serviceReconcileMessage } from '../../shared/queue/messages.js';
import { fifoWorker } from '../../shared/queue/worker.js';
import { reconcileService, recordServiceFailure } from '../../shared/reconcile/service.js';

/**
 * service-reconcile.fifo consumer: one service per record; a failed record fails the rest of its group.
 * The batch's services run side by side, so their hub writes share lock holds (hub-batches.ts).
 */
export const handler = fifoWorker({
  operation: 'service reconcile',
  groupsInParallel: true,
  message: serviceReconcileMessage,
  reconcile: reconcileService,
  describe: (message) => ['service reconcile failed', { serviceName: message.name }],
  onLastDelivery: (message, error) => recordServiceFailure(message.name, error),
});
