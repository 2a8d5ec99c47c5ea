import { config } from '../context.js';
import { DISTRIBUTION_ALL, serviceDistributionTokens } from '../domain/distribution.js';
import { buildKubernetesService } from '../domain/kubernetes-service.js';
import {
  assignedAddress,
  DEFAULT_ROUTER,
  entriesFor,
  hubRouterKey,
  type PlacedMicroservice,
  portOwner,
  type RouterView,
  serviceHubKey,
  serviceSiteKey,
  siteKeyFor,
} from '../domain/placement.js';
import { canonicalJson, type RouterConfig } from '../domain/router-config.js';
import { connectorName, listenerName } from '../domain/router-objects.js';
import { ReconcileError } from '../errors.js';
import { type FaultPoint, faultPoint } from '../faults.js';
import {
  applyKubernetesService,
  awaitLoadBalancerIngress,
  deleteKubernetesService,
} from '../k8s/services.js';
import { logger } from '../log/logger.js';
import { timeStep } from '../metrics/usage.js';
import type { ServiceReconcileMessage } from '../queue/messages.js';
import { enqueueFogReconciles } from '../queue/publishers.js';
import { type AgentRow, getAgentRow, listAgentUuidsByToken } from '../store/agents.js';
import { getMicroservice } from '../store/applications.js';
import {
  type Applied,
  forgetApplied,
  getApplied,
  recordApplied,
  removeAppliedIfEmpty,
} from '../store/applied.js';
import { claimBridgePort } from '../store/ports.js';
import { type DefaultRouterRow, getDefaultRouter, getRouterConfig } from '../store/routers.js';
import {
  getServiceRow,
  recordServiceStatus,
  removeServiceTombstone,
  replaceServiceRow,
  type ServiceRow,
} from '../store/services.js';
import { syncTokenIndex } from '../store/token-index.js';
import { reconcileRouter } from './router.js';

/** What one reconcile works from: the row, the default router and where the row was applied before. */
interface Work {
  row: ServiceRow;
  defaultRouter: DefaultRouterRow | undefined;
  hubKey: string | undefined;
  /** Tokens indexed and routers asked for this name, by this or any earlier reconcile. */
  applied: Applied;
  /** The connector site the row was last applied to (a moved connector leaves it). */
  previousSite: string | null;
}

/** The backend as resolved now: the connector's site, and the agent and microservice behind it. */
interface Backend {
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
  const row = await getServiceRow(message.name);
  if (!row) return;
  if (message.generation <= row.observedGeneration && row.observedGeneration >= row.generation) return;
  const [defaultRouter, applied] = await Promise.all([getDefaultRouter(), getApplied({ service: row.name })]);
  const work: Work = {
    row,
    defaultRouter,
    hubKey: serviceHubKey(row, hubRouterKey(defaultRouter)),
    applied,
    previousSite: applied.routers.includes(row.siteKey ?? '') ? row.siteKey : null,
  };
  if (row.deleted) await removeService(work);
  else await applyService(work);
}

/** Derive, hub, Kubernetes Service, fan-out, status. */
async function applyService(work: Work): Promise<void> {
  const derived = await step(work, 'derive assigned fields', () => deriveAssignedFields(work));
  const tokens = await step(work, 'token index', () => syncServiceTokens(work));
  // The hub is written even when the backend is gone: its listener stays, and a user-facing failure
  // of the backend comes first.
  const hubFailure = await step(work, 'hub lock + hub write', () => convergeHub(work, derived.backend), {
    after: 'service:after-hub-write',
  });
  let failure = derived.failure ?? hubFailure;
  if (needsKubernetesService(work.row) && !failure) {
    failure = await step(work, 'Kubernetes Service', () => convergeKubernetesService(work));
  }
  await step(work, 'fan-out', () => fanOut(work, tokens), { after: 'service:after-fan-out' });
  await step(work, 'status', () => recordOutcome(work, failure), { before: 'service:before-status-write' });
}

/** Token index, hub, Kubernetes Service, fan-out, and the row goes once every router is clean. */
async function removeService(work: Work): Promise<void> {
  await step(work, 'token index', () => syncServiceTokens(work));
  await step(work, 'hub lock + hub write', () => convergeHub(work, { siteKey: null }), {
    after: 'service:after-hub-write',
  });
  if (needsKubernetesService(work.row)) {
    await step(work, 'Kubernetes Service', () => deleteKubernetesService(work.row.name));
  }
  await step(work, 'fan-out', () => fanOut(work, []), { after: 'service:after-fan-out' });
  await step(work, 'status', () => removeTombstone(work.row), { before: 'service:before-status-write' });
}

/** The row goes once every router is clean; its bookkeeping goes with it once nothing is left in it. */
async function removeTombstone(row: ServiceRow): Promise<void> {
  if (await removeServiceTombstone(row.name, row.generation))
    await removeAppliedIfEmpty({ service: row.name });
}

/** One named step: timed when metering, between the fault points the fault tests arm. */
async function step<T>(
  work: Work,
  name: string,
  run: () => Promise<T>,
  faults: { before?: FaultPoint; after?: FaultPoint } = {},
): Promise<T> {
  if (faults.before) faultPoint(faults.before, work.row.name);
  const result = await timeStep(`service: ${name}`, run);
  if (faults.after) faultPoint(faults.after, work.row.name);
  return result;
}

/**
 * Fills what the controller assigns: the bridge port (if the create was interrupted before it), the
 * connector site, and on a remote control plane servicePort and serviceEndpoint.
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
  if (row.type === 'k8s' || row.type === 'external') return { siteKey: siteKeyFor(row.type, undefined) };
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
  return { siteKey: siteKeyFor(row.type, agent.uuid), agent, microservice };
}

/** Token index first, so the fog reconciles the fan-out triggers find the service by its tokens. */
async function syncServiceTokens(work: Work): Promise<string[]> {
  const tokens = work.row.deleted ? [] : serviceDistributionTokens(work.row.tags);
  await syncTokenIndex({ service: work.row.name }, tokens, work.applied);
  return tokens;
}

/**
 * Writes the hub (unless it already reflects this service: a lock holder applies every pending hub change
 * at once) and checks this service's own entries there. Returns the failure a user must fix; a hub that
 * does not hold the entries yet (an index that lags) is retried.
 */
async function convergeHub(work: Work, backend: Backend): Promise<string | undefined> {
  const { row, hubKey } = work;
  if (!hubKey) {
    return row.deleted
      ? undefined
      : 'No default router is registered: create the first agent or PUT /api/v3/router';
  }
  const hub: RouterView = {
    key: hubKey,
    hubKey: hubRouterKey(work.defaultRouter),
    agent: backend.agent?.uuid === hubKey ? backend.agent : undefined,
    tagPrefix: config().serviceAnnotationTag,
  };
  const document = await currentHubDocument(hubKey);
  if (document && !hubMismatch(hub, row, document, backend.microservice)) return undefined;
  let written: Awaited<ReturnType<typeof reconcileRouter>>;
  try {
    written = await reconcileRouter(hubKey, work.defaultRouter);
  } catch (error) {
    // A hub that cannot be written as things stand (the operator's ConfigMap missing or malformed) fails
    // the service with the reason; anything else is retried.
    if (!(error instanceof ReconcileError) || row.deleted) throw error;
    return error.message;
  }
  if (!written.managed) {
    return row.deleted
      ? undefined
      : `Hub router ${row.defaultBridge} has no router config (agent missing or router mode none)`;
  }
  const mismatch = hubMismatch(hub, row, written.config, backend.microservice);
  if (mismatch) throw new ReconcileError(`${mismatch} (index lag); retrying`);
  return undefined;
}

/**
 * What is wrong with this service's entries in a hub document, or undefined when it holds exactly what
 * placement says (once deleted, none of them).
 */
function hubMismatch(
  hub: RouterView,
  row: ServiceRow,
  document: RouterConfig | undefined,
  microservice: PlacedMicroservice | undefined,
): string | undefined {
  const expected = entriesFor(hub, row, microservice);
  const held = {
    listener: document?.bridges?.tcpListeners?.[listenerName(row.name)],
    connector: document?.bridges?.tcpConnectors?.[connectorName(row.name)],
  };
  for (const [kind, name] of [
    ['listener', listenerName(row.name)],
    ['connector', connectorName(row.name)],
  ] as const) {
    if (canonicalJson(held[kind]) === canonicalJson(expected[kind])) continue;
    return expected[kind] ? `Hub does not hold ${name} as desired yet` : `Hub still lists ${name}`;
  }
  return undefined;
}

/** The hub document as it stands, when it can be read cheaply (Kubernetes hubs are written under the lock). */
async function currentHubDocument(hubKey: string): Promise<RouterConfig | undefined> {
  if (hubKey === DEFAULT_ROUTER && config().controlPlane === 'kubernetes') return undefined;
  return (await getRouterConfig(hubKey))?.config;
}

/**
 * Asks every router that holds (or must hold) something of this service to converge: its connector site
 * and the agents old ∪ new tokens select, plus every router it was applied to. A connector that moved
 * (resource changed, microservice moved) leaves its old site first, inline. The routers that hold it
 * from now on are recorded before any is asked; what it no longer touches is forgotten only after.
 */
async function fanOut(work: Work, tokens: string[]): Promise<void> {
  const { row, hubKey, previousSite, applied } = work;
  const site = serviceSiteKey(row, hubRouterKey(work.defaultRouter));
  const everSelected = [...new Set([...tokens, ...applied.tokens])];
  const agentsByToken = await agentsSelectingTokens([DISTRIBUTION_ALL, ...everSelected]);
  const routersFor = (selecting: string[]) => [
    ...new Set([
      ...(site ? [site] : []),
      ...[DISTRIBUTION_ALL, ...selecting].flatMap((token) => agentsByToken.get(token) ?? []),
    ]),
  ];
  const holding = row.deleted ? [] : [...new Set([...routersFor(tokens), ...(hubKey ? [hubKey] : [])])];
  await recordApplied(
    { service: row.name },
    { routers: holding.filter((key) => !applied.routers.includes(key)) },
  );
  const siteMoved = !!previousSite && previousSite !== row.siteKey && previousSite !== hubKey;
  if (siteMoved) await reconcileRouter(previousSite, work.defaultRouter);
  const routers = new Set([...routersFor(everSelected), ...applied.routers]);
  if (hubKey) routers.delete(hubKey);
  if (siteMoved) routers.delete(previousSite);
  await enqueueFogReconciles(routers, row.name);
  await forgetApplied(
    { service: row.name },
    {
      tokens: applied.tokens.filter((token) => !tokens.includes(token)),
      routers: applied.routers.filter((key) => !holding.includes(key)),
    },
  );
}

/** The agents whose distribution tokens include each of `tokens` (token index; rows decide later). */
async function agentsSelectingTokens(tokens: string[]): Promise<Map<string, string[]>> {
  const unique = [...new Set(tokens)];
  const lists = await Promise.all(unique.map((token) => listAgentUuidsByToken(token)));
  return new Map(unique.map((token, index) => [token, lists[index]!]));
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

/** On a Kubernetes control plane every type but k8s gets a Kubernetes Service in front of the hub. */
function needsKubernetesService(row: ServiceRow): boolean {
  return config().controlPlane === 'kubernetes' && row.type !== 'k8s';
}

/**
 * Creates or patches the Kubernetes Service; for a LoadBalancer, waits for its ingress and records it as
 * serviceEndpoint. No ingress after the poll is a failure the user sees, not a silent `ready`.
 */
async function convergeKubernetesService(work: Work): Promise<string | undefined> {
  const { row } = work;
  const settings = config();
  if (row.servicePort === undefined || row.k8sType === undefined || row.bridgePort === null) {
    return `Service ${row.name} needs servicePort and k8sType on a Kubernetes control plane`;
  }
  await applyKubernetesService(
    buildKubernetesService(
      {
        name: row.name,
        tags: row.tags,
        servicePort: row.servicePort,
        bridgePort: row.bridgePort,
        k8sType: row.k8sType,
      },
      {
        namespace: settings.controllerNamespace,
        controllerName: settings.controllerName,
        appLabel: settings.appLabel,
        componentLabelKey: settings.componentLabelKey,
      },
    ),
  );
  if (row.k8sType !== 'LoadBalancer') return undefined;
  const endpoint = await awaitLoadBalancerIngress(row.name);
  if (!endpoint) {
    const { loadBalancerPollAttempts, loadBalancerPollIntervalMs } = settings.kubernetes;
    return `LoadBalancer Service ${row.name} has no ingress address after ${loadBalancerPollAttempts} checks ${loadBalancerPollIntervalMs / 1000} s apart; check the cloud load balancer controller, then POST /api/v3/services/${row.name}/reconcile`;
  }
  if (endpoint === row.serviceEndpoint) return undefined;
  const next = { ...row, serviceEndpoint: endpoint };
  if (!(await replaceServiceRow(next, row.generation))) {
    throw new ReconcileError(`Service ${row.name} changed during reconcile; retrying`);
  }
  work.row = next;
  return undefined;
}
