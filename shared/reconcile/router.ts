import { config } from '../context.js';
import { agentDistributionTokens, agentSelectsService, DISTRIBUTION_ALL } from '../domain/distribution.js';
import {
  applyDesiredBridges,
  type DesiredBridges,
  initialRouterConfig,
  type RouterConfig,
  sameRouterConfig,
} from '../domain/router-config.js';
import {
  buildTcpConnector,
  buildTcpListener,
  type ConnectorBackend,
  type TcpConnector,
} from '../domain/router-objects.js';
import { DEFAULT_BRIDGE } from '../domain/service.js';
import { ContentionError } from '../errors.js';
import { faultPoint } from '../faults.js';
import { applyHubConfigMap } from '../k8s/hub-configmap.js';
import { logger } from '../log/logger.js';
import { usage } from '../metrics/usage.js';
import { type AgentRow, getAgentRow } from '../store/agents.js';
import { getMicroservice } from '../store/applications.js';
import { raiseChangeFlag } from '../store/changes.js';
import { withLock } from '../store/lock.js';
import {
  type DefaultRouterRow,
  getDefaultRouter,
  getRouterConfig,
  hubRouterKey,
  putRouterConfig,
  STANDALONE_DEFAULT_ROUTER,
} from '../store/routers.js';
import {
  getServiceRow,
  listServiceRows,
  listServicesByHub,
  listServicesBySite,
  type ServiceRow,
} from '../store/services.js';
import { listServiceNamesByToken } from '../store/services-by-token.js';

export interface RouterReconcileResult {
  routerKey: string;
  /** False when the router has no config to manage (agent gone, router mode none, no default router). */
  managed: boolean;
  written: boolean;
  config: RouterConfig | undefined;
}

/**
 * Recomputes one router's bridge entries from the store and writes them when they differ:
 * listeners for the services it is hub for and the services its tags select, connectors for the
 * services whose backend it reaches. Everything else in its config stays as found. Idempotent and
 * safe to run concurrently: each write is conditioned on the config's version, and a lost race
 * recomputes. The hub document is also written under the hub lock, so a burst of service reconciles
 * queues on the lock instead of on version conflicts; whoever holds it applies every pending change.
 */
export async function reconcileRouter(
  routerKey: string,
  // A caller that has just read the default router passes it on instead of reading it again.
  knownDefaultRouter?: DefaultRouterRow,
): Promise<RouterReconcileResult> {
  const defaultRouter = knownDefaultRouter ?? (await getDefaultRouter());
  const hubKey = hubRouterKey(defaultRouter);
  if (routerKey !== hubKey) return reconcileRouterUnlocked(routerKey, defaultRouter);
  const { hubLockLeaseMs } = config();
  const result = await withLock(
    `hub:${routerKey}`,
    `${process.pid}:${Math.random().toString(36).slice(2)}`,
    { leaseMs: hubLockLeaseMs, waitMs: hubLockLeaseMs },
    () => reconcileRouterUnlocked(routerKey, defaultRouter),
  );
  if (!result) throw new ContentionError(`The hub lock for router ${routerKey} stayed busy; will retry`);
  return result;
}

async function reconcileRouterUnlocked(
  routerKey: string,
  defaultRouter: DefaultRouterRow | undefined,
): Promise<RouterReconcileResult> {
  const isHub = routerKey === hubRouterKey(defaultRouter);
  const agent = routerKey === STANDALONE_DEFAULT_ROUTER ? undefined : await getAgentRow(routerKey);
  const unmanaged =
    (routerKey === STANDALONE_DEFAULT_ROUTER && !isHub) ||
    (routerKey !== STANDALONE_DEFAULT_ROUTER && !agent);
  if (unmanaged || agent?.routerMode === 'none') {
    return { routerKey, managed: false, written: false, config: undefined };
  }
  if (isHub && routerKey === STANDALONE_DEFAULT_ROUTER && config().controlPlane === 'kubernetes') {
    // On Kubernetes the default router's document is the operator's ConfigMap.
    const result = await applyHubConfigMap(await desiredBridges(routerKey, isHub, agent));
    if (result.written) usage.hubWrites += 1;
    return { routerKey, managed: true, written: result.written, config: result.view };
  }
  for (let attempt = 0; attempt < 20; attempt++) {
    const desired = await desiredBridges(routerKey, isHub, agent);
    const current = await getRouterConfig(routerKey);
    const base = current?.config ?? initialRouterConfig(isHub);
    const next = applyDesiredBridges(base, desired);
    // Nothing to change (a router with no config yet whose desired state is its default counts too):
    // no write, and no change flag for the agent to chase.
    if (sameRouterConfig(base, next)) return { routerKey, managed: true, written: false, config: base };
    faultPoint('router:before-write');
    if (await putRouterConfig(routerKey, next, current?.version ?? 0)) {
      if (isHub) usage.hubWrites += 1;
      if (agent) await raiseChangeFlag(agent.uuid, 'microserviceConfig');
      logger.debug('router config written', {
        routerKey,
        listeners: desired.listeners.length,
        connectors: desired.connectors.length,
      });
      return { routerKey, managed: true, written: true, config: next };
    }
  }
  throw new ContentionError(`Router config ${routerKey} kept changing under reconcile; will retry`);
}

/** The bridge entries a router should hold, computed from the store alone. */
export async function desiredBridges(
  routerKey: string,
  isHub: boolean,
  agent: AgentRow | undefined,
): Promise<DesiredBridges> {
  // The hub answers for services bridged to `default-router` as well as to its own key.
  const bridgeKeys = isHub && routerKey !== DEFAULT_BRIDGE ? [routerKey, DEFAULT_BRIDGE] : [routerKey];
  const [hubServices, siteServices, taggedServices] = await Promise.all([
    Promise.all(bridgeKeys.map((key) => listServicesByHub(key))).then((lists) => lists.flat()),
    Promise.all(bridgeKeys.map((key) => listServicesBySite(key))).then((lists) => lists.flat()),
    agent ? servicesSelectedByAgent(agent) : Promise.resolve([]),
  ]);
  const listenerServices = new Map<string, ServiceRow>();
  for (const service of [...hubServices, ...taggedServices]) {
    if (service.bridgePort !== null && service.bridgePort !== undefined)
      listenerServices.set(service.name, service);
  }
  const connectors = (await Promise.all(siteServices.map((service) => connectorFor(service, agent)))).filter(
    (connector): connector is TcpConnector => connector !== undefined,
  );
  return {
    listeners: [...listenerServices.values()].map((service) =>
      buildTcpListener(service.name, service.bridgePort!),
    ),
    connectors,
  };
}

/** Services whose distribution tokens the agent's tags select (the agent → services direction). */
export async function servicesSelectedByAgent(agent: AgentRow): Promise<ServiceRow[]> {
  if (agent.routerMode === 'none') return [];
  const tokens = agentDistributionTokens(agent.tags, config().serviceAnnotationTag);
  if (tokens.length === 0) return [];
  if (tokens.includes(DISTRIBUTION_ALL)) return listServiceRows();
  const names = new Set((await Promise.all(tokens.map((token) => listServiceNamesByToken(token)))).flat());
  const rows = await Promise.all([...names].map((name) => getServiceRow(name)));
  // The token index may lag the rows; the row's own tags decide.
  return rows.filter(
    (row): row is ServiceRow => !!row && !row.deleted && agentSelectsService(tokens, row.tags),
  );
}

/** The connector a service's backend needs on this router, or undefined when it no longer lives here. */
async function connectorFor(
  service: ServiceRow,
  agent: AgentRow | undefined,
): Promise<TcpConnector | undefined> {
  const backend = await resolveConnectorBackend(service, agent);
  return backend ? buildTcpConnector(service.name, service.targetPort, backend) : undefined;
}

async function resolveConnectorBackend(
  service: ServiceRow,
  agent: AgentRow | undefined,
): Promise<ConnectorBackend | undefined> {
  switch (service.type) {
    case 'k8s':
    case 'external':
      return { type: service.type, resource: service.resource };
    case 'agent':
      if (!agent || agent.uuid !== service.resource) return undefined;
      return { type: 'agent', agentUuid: agent.uuid, routerMode: agent.routerMode };
    case 'microservice': {
      const microservice = await getMicroservice(service.resource);
      if (!agent || !microservice || microservice.agentUuid !== agent.uuid) return undefined;
      return {
        type: 'microservice',
        microserviceUuid: microservice.uuid,
        applicationName: microservice.application,
        microserviceName: microservice.name,
        hostNetworkMode: microservice.hostNetworkMode,
        routerMode: agent.routerMode,
      };
    }
  }
}
