import type { FogRequest } from '../queue/messages.js';
import { applyRouter } from './fog-router.js';
import { applyServiceEntries } from './fog-service-entries.js';
import { reconcileNatsRequest } from './nats-requests.js';

export { fogBatchReadKeys } from './fog-inputs.js';

/**
 * The fog reconcile, by what it was asked; each kind is a recipe of its own and never turns into
 * another (it asks for the other kind instead): one service's entries on one router
 * (fog-service-entries.ts), a whole router with its agent's own part (fog-router.ts), or one of the
 * NATS fabric's requests (nats-requests.ts).
 */
export function reconcileFog(request: FogRequest): Promise<void> {
  switch (request.kind) {
    case 'service-entries':
      return applyServiceEntries(request);
    case 'router':
      return applyRouter(request);
    case 'nats-hub':
    case 'nats-operator':
    case 'nats-application':
      return reconcileNatsRequest(request);
  }
}
