import { fogRequest } from '../../shared/queue/messages.js';
import { fifoWorker } from '../../shared/queue/worker.js';
import { fogBatchReadKeys, reconcileFog } from '../../shared/reconcile/fog.js';

/** fog-reconcile.fifo consumer: one router per record. */
export const handler = fifoWorker({
  operation: 'fog reconcile',
  message: fogRequest,
  reconcile: reconcileFog,
  describe: (message) => ['fog reconcile failed', { routerKey: message.routerKey }],
  prefetch: { operation: 'fog batch read', keys: fogBatchReadKeys },
  // A batch is ten routers: a fan-out's records are one call each, and run side by side.
  groupsInParallel: true,
});
