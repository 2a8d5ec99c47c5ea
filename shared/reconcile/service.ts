import { config } from '../context.js';
import { DISTRIBUTION_ALL } from '../domain/distribution.js';
import {
  assignedAddress,
  connectorRouterFor,
  connectorRouterOf,
  DEFAULT_ROUTER,
  EVERY_SERVICE_SET,
  hubRouterKey,
  listenerSetsOfService,
  type PlacedMicroservice,
  portOwner,
  type RouterEntries,
  type RouterView,
  serviceHubKey,
  storedEntriesFor,
} from '../domain/placement.js';
import { sameEntry } from '../domain/router-config.js';
import { connectorName, listenerName } from '../domain/router-objects.js';
import { ReconcileError } from '../errors.js';
import { type FaultPoint, faultPoint } from '../faults.js';
import { deleteKubernetesService } from '../k8s/services.js';
import { logger } from '../log/logger.js';
import { observeStep } from '../metrics/operations.js';
import type { ServiceReconcileMessage } from '../queue/messages.js';
import { askRoutersForService } from '../queue/publishers.js';
import { type AgentRow, getAgentRow, listAgentUuidsByToken } from '../store/agents.js';
import { getMicroservice } from '../store/applications.js';
import { forgetApplied, getApplied, recordApplied, removeAppliedIfEmpty } from '../store/applied.js';
import { keys } from '../store/client.js';
import { markSelectingSitesPending } from '../store/pending-sites.js';
import { claimBridgePort } from '../store/ports.js';
import { withReadSnapshot } from '../store/read-snapshot.js';
import { forgetReference, referenceTarget } from '../store/references.js';
import { getDefaultRouter, serviceEntryKeys } from '../store/routers.js';
import {
  getServiceRow,
  recordServiceStatus,
  removeServiceTombstone,
  replaceServiceRow,
  type ServiceRow,
} from '../store/services.js';
import { reconcileRouterForService, type ServiceEntriesResult } from './router-service-entries.js';
import { reconcileRouter, tellOfRouterWrite } from './router-write.js';
import { convergeKubernetesService, needsKubernetesService } from './service-kubernetes.js';
import { syncServiceSets } from './service-sets.js';
import type { Work } from './service-work.js';

export type { Work };

/** What one reconcile works from: the row, the default router and where the row was applied before. */
/** The backend as resolved now: the connector router, and the agent and microservice behind it. */
export interface Backend {
  siteKey: string | null;
  agent?: AgentRow;
  microservice?: PlacedMicroservice;
}

/**
 * Converges one service, level-triggered: the message only names it. Reads the row, derives what the
 * routers should hold, writes the hub (under the hub lock) and checks its own entries there, asks every
 * router it touches now or touched before to recompute, and records the outcome at the generation it
 * worked from. Safe to repeat, to run late, or to run twice at once.
 */
export async function reconcileService(message: ServiceReconcileMessage): Promise<void> {
  faultPoint('service:start', message.name);
  // The row, the default router and what was applied, in one batch read.
  await withReadSnapshot(
    [keys.service(message.name), keys.defaultRouter(), keys.applied(`SVC#${message.name}`)],
    () => reconcileFromRow(message),
  );
}

async function reconcileFromRow(message: ServiceReconcileMessage): Promise<void> {
  const row = await getServiceRow(message.name);
  if (!row) return;
  if (message.generation <= row.observedGeneration && row.observedGeneration >= row.generation) return;
  const [defaultRouter, applied] = await Promise.all([getDefaultRouter(), getApplied({ service: row.name })]);
  const work: Work = {
    row,
    defaultRouter,
    hubKey: serviceHubKey(row, hubRouterKey(defaultRouter)),
    applied,
    previousConnectorRouter: applied.routers.includes(row.siteKey ?? '') ? row.siteKey : null,
  };
  // What the row names, in a second batch read: its distribution-set entries and, for the unlocked
  // check of the hub, the hub's agent, base item and this service's two entries there.
  await withReadSnapshot(secondReadKeys(work), () =>
    row.deleted ? removeService(work) : applyService(work),
  );
}

function secondReadKeys({ row, hubKey }: Work): { PK: string; SK: string }[] {
  const sets = row.deleted ? [] : listenerSetsOfService(row.tags);
  const hub = hubKey ? serviceEntryKeys(hubKey, row.name) : undefined;
  return [
    ...sets.map((set) => keys.serviceToken(set, row.name)),
    ...(hubKey && hubKey !== DEFAULT_ROUTER ? [keys.agent(hubKey)] : []),
    ...(hubKey && hub ? [keys.routerConfig(hubKey), hub.listener, hub.connector] : []),
  ];
}

/** Derive, hub, Kubernetes Service, fan-out, status. */
async function applyService(work: Work): Promise<void> {
  const derived = await step(work, 'derive assigned fields', () => deriveAssignedFields(work));
  const { sets, selectionChanged } = await step(work, 'distribution sets', () => syncServiceSets(work));
  // The hub is written even when the backend is gone: its listener stays, and a user-facing failure
  // of the backend comes first.
  const hubFailure = await step(work, 'hub lock + hub write', () => convergeHub(work, derived.backend), {
    after: 'service:after-hub-write',
  });
  let failure = derived.failure ?? hubFailure;
  if (needsKubernetesService(work.row) && !failure) {
    failure = await step(work, 'Kubernetes Service', () => convergeKubernetesService(work));
  }
  await step(work, 'fan-out', () => fanOut(work, sets, selectionChanged), {
    after: 'service:after-fan-out',
  });
  await step(work, 'status', () => recordOutcome(work, failure), { before: 'service:before-status-write' });
}

/** Token index, hub, Kubernetes Service, fan-out, and the row goes once every router is clean. */
async function removeService(work: Work): Promise<void> {
  const { selectionChanged } = await step(work, 'distribution sets', () => syncServiceSets(work));
  await step(work, 'hub lock + hub write', () => convergeHub(work, { siteKey: null }), {
    after: 'service:after-hub-write',
  });
  if (needsKubernetesService(work.row)) {
    await step(work, 'Kubernetes Service', () => deleteKubernetesService(work.row.name));
  }
  await step(work, 'fan-out', () => fanOut(work, [], selectionChanged), { after: 'service:after-fan-out' });
  await step(work, 'status', () => removeTombstone(work.row), { before: 'service:before-status-write' });
}

/** The row goes once every router is clean; its bookkeeping goes with it once nothing is left in it. */
async function removeTombstone(row: ServiceRow): Promise<void> {
  if (!(await removeServiceTombstone(row.name, row.generation))) return;
  await removeAppliedIfEmpty({ service: row.name });
  if (row.type === 'microservice') {
    await forgetReference(referenceTarget.microservice(row.resource), 'backend', row.name);
  }
}

/** One named step: measured (operations.ts), between the fault points the fault tests arm. */
async function step<T>(
  work: Work,
  name: string,
  run: () => Promise<T>,
  faults: { before?: FaultPoint; after?: FaultPoint } = {},
): Promise<T> {
  if (faults.before) faultPoint(faults.before, work.row.name);
  const result = await observeStep(`service: ${name}`, run);
  if (faults.after) faultPoint(faults.after, work.row.name);
  return result;
}

/**
 * Fills what the controller assigns: the bridge port (if the create was interrupted before it), the
 * connector router, and on a remote control plane servicePort and serviceEndpoint.
 */
async function deriveAssignedFields(work: Work): Promise<{ backend: Backend; failure?: string }> {
  const { row } = work;
  const bridgePort = row.bridgePort ?? (await claimBridgePort(portOwner(row), config().bridgePorts));
  let backend: Backend = { siteKey: null };
  let failure: string | undefined;
  try {
    backend = await resolveBackend(row);
  } catch (error) {
    if (!(error instanceof ReconcileError)) throw error;
    failure = error.message;
  }
  const address = assignedAddress(
    config().controlPlane,
    { ...row, bridgePort },
    work.defaultRouter?.host ?? null,
  );
  const next: ServiceRow = { ...row, bridgePort, siteKey: backend.siteKey, ...address };
  const changed =
    next.bridgePort !== row.bridgePort ||
    next.siteKey !== row.siteKey ||
    next.servicePort !== row.servicePort ||
    next.serviceEndpoint !== row.serviceEndpoint;
  if (changed && !(await replaceServiceRow(next, row.generation))) {
    throw new ReconcileError(`Service ${row.name} changed during reconcile; retrying`);
  }
  work.row = next;
  return { backend, failure };
}

/** The router that must hold the service's connector, from the backend as it is now. */
async function resolveBackend(row: ServiceRow): Promise<Backend> {
  if (row.type === 'k8s' || row.type === 'external')
    return { siteKey: connectorRouterFor(row.type, undefined) };
  let agentUuid = row.resource;
  let microservice: PlacedMicroservice | undefined;
  if (row.type === 'microservice') {
    microservice = await getMicroservice(row.resource);
    if (!microservice)
      throw new ReconcileError(`Microservice ${row.resource} of service ${row.name} no longer exists`);
    agentUuid = microservice.agentUuid;
  }
  const agent = await getAgentRow(agentUuid);
  if (!agent) throw new ReconcileError(`Agent ${agentUuid} backing service ${row.name} no longer exists`);
  if (agent.routerMode === 'none') {
    throw new ReconcileError(
      `Agent ${agent.name} backing service ${row.name} has router mode none; a TCP bridge service requires a router on the agent`,
    );
  }
  return { siteKey: connectorRouterFor(row.type, agent.uuid), agent, microservice };
}

/**
 * Writes this service's entries on the hub (under the hub lock) and returns the failure a user must fix.
 * Only its own two entries are read and written; a Kubernetes hub (the operator's ConfigMap, one
 * document) is written whole and then checked, and a hub that does not hold the entries yet (an index
 * that lags) is retried.
 */
async function convergeHub(work: Work, backend: Backend): Promise<string | undefined> {
  const { row, hubKey } = work;
  if (!hubKey) {
    return row.deleted
      ? undefined
      : 'No default router is registered: create the first agent or PUT /api/v3/router';
  }
  const hubAgent = backend.agent?.uuid === hubKey ? backend.agent : undefined;
  let written: ServiceEntriesResult;
  try {
    written = await reconcileRouterForService(hubKey, row, row.name, work.defaultRouter, {
      ...(hubAgent ? { agent: hubAgent } : {}),
      ...(backend.microservice ? { microservice: backend.microservice } : {}),
    });
    // A hub with no config yet: its whole first computation, which holds this service too.
    if (written.routerNeeded) written = await firstHubConfig(hubKey, work.defaultRouter, hubAgent, written);
  } catch (error) {
    // A hub that cannot be written as things stand (the operator's ConfigMap missing or malformed, a
    // config over its size limit) fails the service with the reason; anything else is retried.
    if (!(error instanceof ReconcileError) || row.deleted) throw error;
    return error.message;
  }
  if (!written.managed) {
    return row.deleted
      ? undefined
      : `Hub router ${row.defaultBridge} has no router config (agent missing or router mode none)`;
  }
  const hub: RouterView = {
    key: hubKey,
    hubKey: hubRouterKey(work.defaultRouter),
    agent: hubAgent,
    tagPrefix: config().serviceAnnotationTag,
  };
  const mismatch = hubMismatch(row.name, written.entries, storedEntriesFor(hub, row, backend.microservice));
  if (mismatch) throw new ReconcileError(`${mismatch} (index lag); retrying`);
  return undefined;
}

/** The hub's first config, computed whole (it holds `entries`' service too). */
async function firstHubConfig(
  hubKey: string,
  defaultRouter: Work['defaultRouter'],
  hubAgent: AgentRow | undefined,
  asked: ServiceEntriesResult,
): Promise<ServiceEntriesResult> {
  const full = await reconcileRouter(hubKey, defaultRouter, hubAgent ? { agent: hubAgent } : {});
  if (hubAgent) await tellOfRouterWrite(hubAgent.uuid, full);
  return { managed: full.managed, written: full.written, entries: asked.entries };
}

/** What is wrong with a service's entries on the hub, or undefined when it holds exactly what is wanted. */
function hubMismatch(name: string, held: RouterEntries, expected: RouterEntries): string | undefined {
  for (const [kind, entryName] of [
    ['listener', listenerName(name)],
    ['connector', connectorName(name)],
  ] as const) {
    if (sameEntry(held[kind], expected[kind])) continue;
    return expected[kind] ? `Hub does not hold ${entryName} as desired yet` : `Hub still lists ${entryName}`;
  }
  return undefined;
}

/**
 * Asks every router that holds (or must hold) something of this service under it to converge: its
 * connector router and every router it was applied to; and when its distribution-set listener changed,
 * every agent old ∪ new tokens select, to be told. A connector that moved (resource changed,
 * microservice moved) leaves its old connector router first, inline. The routers that hold it from now on are
 * recorded before any is asked; what it no longer touches is forgotten only after.
 */
async function fanOut(work: Work, sets: string[], selectionChanged: boolean): Promise<void> {
  const { row, hubKey, previousConnectorRouter, applied } = work;
  const connectorRouter = connectorRouterOf(row, hubRouterKey(work.defaultRouter));
  const everSelected = [...new Set([...sets, ...applied.tokens])].filter((set) => set !== EVERY_SERVICE_SET);
  const selecting = selectionChanged ? await agentsSelectingTokens([DISTRIBUTION_ALL, ...everSelected]) : [];
  const holding = row.deleted
    ? []
    : [...new Set([...(connectorRouter ? [connectorRouter] : []), ...(hubKey ? [hubKey] : [])])];
  await Promise.all([
    recordApplied(
      { service: row.name },
      { routers: holding.filter((key) => !applied.routers.includes(key)) },
    ),
    // Every agent that selects it has not applied the changed listener until it acknowledges past now.
    selectionChanged && !row.deleted ? markSelectingSitesPending(selecting, row.name) : undefined,
  ]);
  const connectorMoved =
    !!previousConnectorRouter &&
    previousConnectorRouter !== row.siteKey &&
    previousConnectorRouter !== hubKey;
  if (connectorMoved)
    await reconcileRouterForService(previousConnectorRouter, row, row.name, work.defaultRouter);
  const routers = new Set([...(connectorRouter ? [connectorRouter] : []), ...selecting, ...applied.routers]);
  // The hub's entries were written above; an agent hub that selects the service is still told.
  if (hubKey && !selecting.includes(hubKey)) routers.delete(hubKey);
  if (connectorMoved) routers.delete(previousConnectorRouter);
  await askRoutersForService(routers, row.name, { raise: selectionChanged });
  await forgetApplied(
    { service: row.name },
    {
      tokens: applied.tokens.filter((token) => !sets.includes(token)),
      routers: applied.routers.filter((key) => !holding.includes(key)),
    },
    // Every agent that selects it (old ∪ new tokens) was asked above.
    { clearSelectionPending: selectionChanged },
  );
}

/** The agents whose distribution tokens include any of `tokens` (token index; rows decide later). */
async function agentsSelectingTokens(tokens: string[]): Promise<string[]> {
  const lists = await Promise.all([...new Set(tokens)].map((token) => listAgentUuidsByToken(token)));
  return [...new Set(lists.flat())];
}

/** Records the outcome at the generation this reconcile worked from (a newer change converges itself). */
async function recordOutcome(work: Work, failure: string | undefined): Promise<void> {
  const { row } = work;
  const applied: ServiceRow = {
    ...row,
    provisioningStatus: failure ? 'failed' : 'ready',
    provisioningError: failure ?? null,
    observedGeneration: row.generation,
    updatedAt: new Date().toISOString(),
  };
  if (!(await replaceServiceRow(applied, row.generation))) {
    logger.debug('service changed during reconcile; the newer message converges it', {
      serviceName: row.name,
    });
  }
}

/** Marks a service failed with the error that exhausted its retries (the poison-message path). */
export async function recordServiceFailure(name: string, error: unknown): Promise<void> {
  const row = await getServiceRow(name);
  if (!row || row.deleted) return;
  await recordServiceStatus(name, row.generation, {
    provisioningStatus: 'failed',
    provisioningError: `Reconcile failed repeatedly: ${(error as Error)?.message ?? String(error)}`,
  });
}
