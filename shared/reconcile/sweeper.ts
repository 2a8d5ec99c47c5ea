import { config } from '../context.js';
import { hubRouterKey, parsePortOwner, portOwner } from '../domain/placement.js';
import { logger } from '../log/logger.js';
import { enqueueFogReconciles, enqueueServiceReconcile } from '../queue/publishers.js';
import { listAgentRows, listPendingAgentUuids } from '../store/agents.js';
import { leakedPorts, listPortClaims, releaseBridgePort, returnToAllocator } from '../store/ports.js';
import { getDefaultRouter } from '../store/routers.js';
import { getServiceRow, listPendingServiceNames } from '../store/services.js';

export interface SweepResult {
  services: number;
  routers: number;
  releasedPorts: number;
}

/**
 * Re-drives whatever lags: services and agents whose generation is ahead of what reconcile observed
 * (older than the grace period, or all of them on a full sweep), and bridge-port claims whose owner is
 * gone. A full sweep (local start-up, where queued messages did not survive) also re-converges every
 * router, since a lost fan-out leaves no trace in the rows.
 */
export async function sweep(options: { full: boolean; now?: number }): Promise<SweepResult> {
  const now = options.now ?? Date.now();
  const graceMs = options.full ? 0 : config().pendingGraceMs;
  const cause = `sweep-${now}`;
  const pending = (await listPendingServiceNames()).filter(
    (service) => now - Date.parse(service.updatedAt) >= graceMs,
  );
  for (const service of pending)
    await enqueueServiceReconcile({ name: service.name, generation: service.generation }, cause);

  const routers = new Set(await listPendingAgentUuids());
  if (options.full) {
    for (const agent of await listAgentRows()) routers.add(agent.uuid);
    const hub = hubRouterKey(await getDefaultRouter());
    if (hub) routers.add(hub);
  }
  if (routers.size > 0) await enqueueFogReconciles(routers);

  let releasedPorts = 0;
  for (const claim of await listPortClaims()) {
    if (now - Date.parse(claim.claimedAt) < config().pendingGraceMs) continue;
    const owner = await getServiceRow(parsePortOwner(claim.owner).name);
    if (
      !owner ||
      owner.deleted ||
      portOwner(owner) !== claim.owner ||
      (owner.bridgePort !== null && owner.bridgePort !== claim.port)
    ) {
      await releaseBridgePort(claim.port, claim.owner, config().bridgePorts);
      releasedPorts++;
    }
  }
  // Ports a crashed create took from the allocator but never claimed go back to it.
  for (const port of await leakedPorts(config().bridgePorts)) {
    await returnToAllocator(port, config().bridgePorts);
    releasedPorts++;
  }
  const result = { services: pending.length, routers: routers.size, releasedPorts };
  if (result.services + result.routers + result.releasedPorts > 0)
    logger.info('sweep re-drove work', { ...result });
  return result;
}
