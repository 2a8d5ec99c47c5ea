import { countEvent, observeStep } from '../metrics/operations.js';
import type { FogRequest } from '../queue/messages.js';
import { askRouterReconciles } from '../queue/publishers.js';
import { raiseChangeFlags } from '../store/changes.js';
import { changeCounterNow, markSitePending } from '../store/pending-sites.js';
import { readFogInputs } from './fog-inputs.js';
import { reconcileRouterForService } from './router-service-entries.js';
import { markTold } from './router-write.js';

/**
 * One service's entries on one router (fog request `service-entries`, a service's fan-out):
 *
 * 1. the router's request counters, agent, base item, the service's two entries and its row, in one
 *    batch read (`readFogInputs`);
 * 2. that service's entries written as its row wants them, nothing else of the router read or
 *    rewritten (`reconcileRouterForService`), which tells the agent of a write;
 * 3. a router with no stored config yet is asked for its whole computation instead, which holds the
 *    service too;
 * 4. the agent told when the service's listener in a distribution set it selects changed (`raise`):
 *    its config is composed with that listener even when nothing under its router moved.
 */
export async function applyServiceEntries(
  request: Extract<FogRequest, { kind: 'service-entries' }>,
): Promise<void> {
  const { routerKey, service } = request;
  const inputs = await readFogInputs(routerKey, service);
  const { agent } = inputs;
  countEvent('router reconcile');
  const result = await observeStep('fog: service entries', () =>
    reconcileRouterForService(routerKey, inputs.service, service, inputs.defaultRouter, {
      ...(agent ? { agent } : {}),
      ...(inputs.stored ? { stored: inputs.stored } : {}),
    }),
  );
  if (result.routerNeeded) {
    // The whole computation tells the agent (and marks its router): this service's marker stops awaiting.
    if (agent)
      await markSitePending(agent.uuid, { service }, await changeCounterNow(agent.uuid), { told: true });
    return askRouterReconciles([routerKey]);
  }
  if (request.raise && agent && result.managed && !result.written) {
    const stamp = await raiseChangeFlags(agent.uuid, ['microserviceConfig']);
    await markTold(agent.uuid, { service }, stamp);
  }
}
