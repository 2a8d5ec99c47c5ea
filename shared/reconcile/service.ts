import { config } from '../context.js';
import { DISTRIBUTION_ALL, serviceDistributionTokens } from '../domain/distribution.js';
import { buildKubernetesService } from '../domain/kubernetes-service.js';
import { canonicalJson } from '../domain/router-config.js';
import {
  buildTcpConnector,
  buildTcpListener,
  connectorName,
  connectorOnDefaultRouter,
  listenerName,
} from '../domain/router-objects.js';
import { DEFAULT_BRIDGE } from '../domain/service.js';
import { ReconcileError } from '../errors.js';
import { faultPoint } from '../faults.js';
import {
  applyKubernetesService,
  awaitLoadBalancerIngress,
  deleteKubernetesService,
} from '../k8s/services.js';
import { logger } from '../log/logger.js';
import { timeStep } from '../metrics/usage.js';
import type { ServiceReconcileMessage } from '../queue/messages.js';
import { enqueueRouterReconciles } from '../queue/publishers.js';
import { getAgentRow, listAgentUuidsByToken } from '../store/agents.js';
import { getMicroservice } from '../store/applications.js';
import { claimBridgePort } from '../store/ports.js';
import {
  getDefaultRouter,
  getRouterConfig,
  hubRouterKey,
  STANDALONE_DEFAULT_ROUTER,
} from '../store/routers.js';
import {
  getServiceRow,
  recordServiceStatus,
  removeServiceTombstone,
  replaceServiceRow,
  type ServiceRow,
  setServiceTokens,
} from '../store/services.js';
import { reconcileRouter } from './router.js';

/** The owner id of a service's bridge-port claim: one per incarnation of the name. */
export const portOwner = (row: Pick<ServiceRow, 'name' | 'incarnation'>) => `${row.name}#${row.incarnation}`;

/**
 * Converges one service, level-triggered: the message only names it. Reads the row, derives what the
 * routers should hold, writes the hub (under the hub lock) and checks its own entries there, asks every
 * router it touches now or touched before to recompute, and records the outcome at the generation it
 * worked from. Safe to repeat, to run late, or to run twice at once.
 */
export async function reconcileService(message: ServiceReconcileMessage): Promise<void> {
  faultPoint('service:start', message.name);
  let row = await getServiceRow(message.name);
  if (!row) return;
  if (message.generation <= row.observedGeneration && row.observedGeneration >= row.generation) return;

  const defaultRouter = await getDefaultRouter();
  const hubKey = row.defaultBridge === DEFAULT_BRIDGE ? hubRouterKey(defaultRouter) : row.defaultBridge;

  const previousSite = row.appliedRouters.includes(row.siteKey ?? '') ? row.siteKey : null;
  let failure: string | undefined;
  if (!row.deleted) {
    const derived = await timeStep('service: derive assigned fields', () =>
      deriveAssignedFields(row!, defaultRouter?.host ?? null),
    );
    failure = derived.failure;
    row = derived.row;
  }

  // Token index first, so fog reconciles triggered below find the service by its tokens.
  const tokens = row.deleted ? [] : serviceDistributionTokens(row.tags);
  // Agents that old ∪ new tags select (the tombstone keeps its tags), plus wherever it was applied.
  const everSelected = [...new Set([...serviceDistributionTokens(row.tags), ...row.appliedTokens])];
  const appliedTokens = row.appliedTokens;
  await setServiceTokens(
    row.name,
    tokens.filter((token) => !appliedTokens.includes(token)),
    appliedTokens.filter((token) => !tokens.includes(token)),
  );

  if (hubKey) {
    // A lock holder applies every pending hub change at once: if the hub already reflects this
    // service, there is nothing to write and no reason to queue for the lock.
    const document = await currentHubDocument(hubKey);
    const reflected = document !== undefined && hubMismatch(row, document) === undefined;
    let hub: Awaited<ReturnType<typeof reconcileRouter>> | undefined;
    try {
      hub = reflected
        ? undefined
        : await timeStep('service: hub lock + hub write', () => reconcileRouter(hubKey, defaultRouter));
    } catch (error) {
      // A hub that cannot be written as things stand (the operator's ConfigMap missing or malformed)
      // fails the service with the reason; anything else is retried.
      if (!(error instanceof ReconcileError) || row.deleted) throw error;
      failure ??= error.message;
    }
    if (hub?.managed) {
      const mismatch = hubMismatch(row, hub.config);
      if (mismatch) throw new ReconcileError(`${mismatch} (index lag); retrying`);
    } else if (hub && !row.deleted) {
      failure ??= `Hub router ${row.defaultBridge} has no router config (agent missing or router mode none)`;
    }
  } else if (!row.deleted) {
    failure ??= 'No default router is registered: create the first agent or PUT /api/v3/router';
  }

  faultPoint('service:after-hub-write', row.name);

  if (needsKubernetesService(row)) {
    if (row.deleted) await deleteKubernetesService(row.name);
    else if (!failure) {
      const current = row;
      const outcome = await timeStep('service: Kubernetes Service', () => convergeKubernetesService(current));
      failure = outcome.failure;
      row = outcome.row;
    }
  }

  // Routers that hold (or must hold) something of this service: its connector site and the agents
  // its tokens select now (desired), and everything old ∪ new tags select or it was applied to (fan-out).
  const site = row.siteKey === DEFAULT_BRIDGE ? hubRouterKey(defaultRouter) : row.siteKey;
  const agentsByToken = await agentsSelectingTokens([DISTRIBUTION_ALL, ...everSelected]);
  const routersFor = (selecting: string[]) => [
    ...new Set([
      ...(site ? [site] : []),
      ...[DISTRIBUTION_ALL, ...selecting].flatMap((t) => agentsByToken.get(t) ?? []),
    ]),
  ];
  const desiredRouters = row.deleted ? [] : routersFor(tokens);
  // A connector that moved (resource changed, microservice moved) leaves its old site first, inline;
  // then every router the service touches now or touched before is asked to converge.
  const siteMoved = !!previousSite && previousSite !== row.siteKey && previousSite !== hubKey;
  if (siteMoved) await reconcileRouter(previousSite, defaultRouter);
  const fanOut = new Set([...routersFor(everSelected), ...row.appliedRouters]);
  if (hubKey) fanOut.delete(hubKey);
  if (siteMoved) fanOut.delete(previousSite);
  await timeStep('service: fan-out', () => enqueueRouterReconciles(fanOut, row!.name));
  faultPoint('service:after-fan-out', row.name);

  faultPoint('service:before-status-write', row.name);
  if (row.deleted) {
    await removeServiceTombstone(row.name, row.generation);
    return;
  }
  const applied: ServiceRow = {
    ...row,
    provisioningStatus: failure ? 'failed' : 'ready',
    provisioningError: failure ?? null,
    observedGeneration: row.generation,
    appliedRouters: [...new Set([...desiredRouters, ...(hubKey ? [hubKey] : [])])],
    appliedTokens: tokens,
    updatedAt: new Date().toISOString(),
  };
  if (!(await replaceServiceRow(applied, row.generation))) {
    logger.debug('service changed during reconcile; the newer message converges it', { service: row.name });
  }
}

/**
 * Fills what the controller assigns: the bridge port (if the create was interrupted before it),
 * the connector site, and on a remote control plane servicePort and serviceEndpoint.
 */
async function deriveAssignedFields(
  row: ServiceRow,
  hubHost: string | null,
): Promise<{ row: ServiceRow; failure?: string }> {
  let failure: string | undefined;
  const bridgePort = row.bridgePort ?? (await claimBridgePort(portOwner(row), config().bridgePorts));
  let siteKey: string | null = null;
  try {
    siteKey = await resolveSiteKey(row);
  } catch (error) {
    if (!(error instanceof ReconcileError)) throw error;
    failure = error.message;
  }
  const remote = config().controlPlane !== 'kubernetes';
  const next: ServiceRow = {
    ...row,
    bridgePort,
    siteKey,
    servicePort: remote ? bridgePort : row.servicePort,
    serviceEndpoint: remote ? hubHost : row.serviceEndpoint,
  };
  const changed =
    next.bridgePort !== row.bridgePort ||
    next.siteKey !== row.siteKey ||
    next.servicePort !== row.servicePort ||
    next.serviceEndpoint !== row.serviceEndpoint;
  if (changed && !(await replaceServiceRow(next, row.generation))) {
    throw new ReconcileError(`Service ${row.name} changed during reconcile; retrying`);
  }
  return { row: next, failure };
}

/** The router that must hold the service's connector, from the backend as it is now. */
export async function resolveSiteKey(row: Pick<ServiceRow, 'type' | 'resource' | 'name'>): Promise<string> {
  if (connectorOnDefaultRouter(row.type)) return DEFAULT_BRIDGE;
  let agentUuid = row.resource;
  if (row.type === 'microservice') {
    const microservice = await getMicroservice(row.resource);
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
  return agent.uuid;
}

/** The agents whose distribution tokens include each of `tokens` (token index; rows decide later). */
async function agentsSelectingTokens(tokens: string[]): Promise<Map<string, string[]>> {
  const unique = [...new Set(tokens)];
  const lists = await Promise.all(unique.map((token) => listAgentUuidsByToken(token)));
  return new Map(unique.map((token, index) => [token, lists[index]!]));
}

/**
 * What is wrong with this service's entries in a hub document, or undefined when it holds exactly
 * them (or, once deleted, none of them).
 */
function hubMismatch(
  row: ServiceRow,
  hubConfig: { bridges?: { tcpListeners?: object; tcpConnectors?: object } } | undefined,
): string | undefined {
  const listeners = (hubConfig?.bridges?.tcpListeners ?? {}) as Record<string, unknown>;
  const connectors = (hubConfig?.bridges?.tcpConnectors ?? {}) as Record<string, unknown>;
  const listener = listeners[listenerName(row.name)];
  const connector = connectors[connectorName(row.name)];
  const hubOwnsConnector = connectorOnDefaultRouter(row.type);
  if (row.deleted) {
    if (listener) return `Hub still lists ${listenerName(row.name)}`;
    if (hubOwnsConnector && connector) return `Hub still lists ${connectorName(row.name)}`;
    return undefined;
  }
  if (canonicalJson(listener) !== canonicalJson(buildTcpListener(row.name, row.bridgePort!))) {
    return `Hub does not hold ${listenerName(row.name)} as desired yet`;
  }
  if (hubOwnsConnector) {
    const expected = buildTcpConnector(row.name, row.targetPort, {
      type: row.type as 'k8s' | 'external',
      resource: row.resource,
    });
    if (canonicalJson(connector) !== canonicalJson(expected))
      return `Hub does not hold ${connectorName(row.name)} as desired yet`;
  }
  return undefined;
}

/**
 * The hub document as it stands, when it can be read cheaply (a router config item). Kubernetes
 * hubs are always written under the lock.
 */
async function currentHubDocument(hubKey: string) {
  if (hubKey === STANDALONE_DEFAULT_ROUTER && config().controlPlane === 'kubernetes') return undefined;
  return (await getRouterConfig(hubKey))?.config;
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
 * Creates or patches the Kubernetes Service; for a LoadBalancer, waits for its ingress and records it
 * as serviceEndpoint. No ingress after the poll is a failure the user sees, not a silent `ready`.
 */
async function convergeKubernetesService(row: ServiceRow): Promise<{ row: ServiceRow; failure?: string }> {
  const settings = config();
  if (row.servicePort === undefined || row.k8sType === undefined || row.bridgePort === null) {
    return {
      row,
      failure: `Service ${row.name} needs servicePort and k8sType on a Kubernetes control plane`,
    };
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
  if (row.k8sType !== 'LoadBalancer') return { row };
  const endpoint = await awaitLoadBalancerIngress(row.name);
  if (!endpoint) {
    const { loadBalancerPollAttempts, loadBalancerPollIntervalMs } = settings.kubernetes;
    return {
      row,
      failure: `LoadBalancer Service ${row.name} has no ingress address after ${loadBalancerPollAttempts} checks ${loadBalancerPollIntervalMs / 1000} s apart; check the cloud load balancer controller, then POST /api/v3/services/${row.name}/reconcile`,
    };
  }
  if (endpoint === row.serviceEndpoint) return { row };
  const next = { ...row, serviceEndpoint: endpoint };
  if (!(await replaceServiceRow(next, row.generation))) {
    throw new ReconcileError(`Service ${row.name} changed during reconcile; retrying`);
  }
  return { row: next };
}
