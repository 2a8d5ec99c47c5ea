import { config } from '../context.js';
import { DEFAULT_ROUTER_PORTS } from '../domain/agent-schema.js';
import { agentDistributionTokens, agentSelectsService, DISTRIBUTION_ALL } from '../domain/distribution.js';
import {
  DEFAULT_ROUTER,
  entriesFor,
  hubRouterKey,
  type PlacedMicroservice,
  type RouterView,
  serviceSiteKey,
} from '../domain/placement.js';
import {
  applyDesiredBridges,
  applyRouterSite,
  type DesiredBridges,
  initialRouterConfig,
  type RouterConfig,
  sameRouterConfig,
} from '../domain/router-config.js';
import {
  agentCertificateToken,
  buildRouterSiteConfig,
  routerCertificateSpecs,
  type Upstream,
} from '../domain/router-site.js';
import { applyDesiredToSkrouterd } from '../domain/skrouterd.js';
import { ContentionError } from '../errors.js';
import { faultPoint } from '../faults.js';
import { applyHubConfigMap, readHubConfigMap } from '../k8s/hub-configmap.js';
import { logger } from '../log/logger.js';
import { usage } from '../metrics/usage.js';
import { CONFLICT, retryOnConflict } from '../retry.js';
import { type AgentRow, getAgentRow } from '../store/agents.js';
import { getMicroservice } from '../store/applications.js';
import { getCertificate } from '../store/certificates.js';
import { raiseChangeFlag } from '../store/changes.js';
import { withLock } from '../store/lock.js';
import {
  type DefaultRouterRow,
  getDefaultRouter,
  getRouterConfig,
  putRouterConfig,
  type RouterConfigRow,
} from '../store/routers.js';
import {
  getServiceRow,
  listServiceNamesByToken,
  listServiceRows,
  listServicesByHub,
  listServicesBySite,
  type ServiceRow,
} from '../store/services.js';

export interface RouterReconcileResult {
  routerKey: string;
  /** False when the router has no config to manage (agent gone, router mode none, no default router). */
  managed: boolean;
  written: boolean;
  config: RouterConfig | undefined;
}

/**
 * Recomputes one router's bridge entries from the store and writes them when they differ: listeners for
 * the services it is hub for and the services its tags select, connectors for the services whose backend
 * it reaches (shared/domain/placement.ts decides each). Everything else in its config stays as found.
 * Idempotent and safe to run concurrently: each write is conditioned on the config's version, and a lost
 * race recomputes. The hub document is also written under the hub lock, so a burst of service reconciles
 * queues on the lock instead of on version conflicts; whoever holds it applies every pending change.
 */
export async function reconcileRouter(
  routerKey: string,
  // A caller that has just read the default router passes it on instead of reading it again.
  knownDefaultRouter?: DefaultRouterRow,
  known: KnownRouterInputs = {},
): Promise<RouterReconcileResult> {
  const defaultRouter = knownDefaultRouter ?? (await getDefaultRouter());
  if (routerKey !== hubRouterKey(defaultRouter)) return writeRouterBridges(routerKey, defaultRouter, known);
  const { hubLockLeaseMs } = config();
  const result = await withLock(
    `hub:${routerKey}`,
    `${process.pid}:${Math.random().toString(36).slice(2)}`,
    { leaseMs: hubLockLeaseMs, waitMs: hubLockLeaseMs },
    () => writeRouterBridges(routerKey, defaultRouter),
  );
  if (!result) throw new ContentionError(`The hub lock for router ${routerKey} stayed busy; will retry`);
  return result;
}

/**
 * What a caller already read for this router (the fog worker reads them in one batch): the agent row,
 * the stored config (`null`: read, and there is none), and whether the agent's own part of the config
 * may have changed (`site: false`: only bridges move, the stored site part stays as it is).
 */
export interface KnownRouterInputs {
  agent?: AgentRow;
  current?: RouterConfigRow | null;
  site?: boolean;
}

/** A router as placement sees it, with the whole agent row behind it (its site config needs it all). */
export interface ManagedRouter extends RouterView {
  agent?: AgentRow;
}

/** The router placement reasons about, or undefined when there is no config to manage. */
export async function routerView(
  routerKey: string,
  defaultRouter: DefaultRouterRow | undefined,
  knownAgent?: AgentRow,
): Promise<ManagedRouter | undefined> {
  const hubKey = hubRouterKey(defaultRouter);
  const tagPrefix = config().serviceAnnotationTag;
  if (routerKey === DEFAULT_ROUTER) {
    return hubKey === DEFAULT_ROUTER ? { key: routerKey, hubKey, tagPrefix } : undefined;
  }
  const agent = knownAgent ?? (await getAgentRow(routerKey));
  if (!agent || agent.routerMode === 'none') return undefined;
  return { key: routerKey, hubKey, agent, tagPrefix };
}

async function writeRouterBridges(
  routerKey: string,
  defaultRouter: DefaultRouterRow | undefined,
  known: KnownRouterInputs = {},
): Promise<RouterReconcileResult> {
  const router = await routerView(routerKey, defaultRouter, known.agent);
  if (!router) return { routerKey, managed: false, written: false, config: undefined };
  if (router.key === DEFAULT_ROUTER && config().controlPlane === 'kubernetes') {
    // On Kubernetes the default router's document is the operator's ConfigMap.
    const result = await applyHubConfigMap(await desiredBridges(router));
    if (result.written) usage.hubWrites += 1;
    return { routerKey, managed: true, written: result.written, config: result.view };
  }
  const isHub = router.key === router.hubKey;
  // The stored config read with the caller's batch serves the first attempt; a lost race reads again.
  let prefetched = known.current;
  return retryOnConflict(
    async () => {
      const { current, base, next, desired } = await plannedRouterConfig(router, defaultRouter, {
        current: prefetched,
        site: known.site ?? true,
      });
      prefetched = undefined;
      // Nothing to change (a router with no config yet whose desired state is its default counts too):
      // no write, and no change flag for the agent to chase.
      if (sameRouterConfig(base, next)) return { routerKey, managed: true, written: false, config: base };
      faultPoint('router:before-write');
      if (!(await putRouterConfig(routerKey, next, current?.version ?? 0))) return CONFLICT;
      if (isHub) usage.hubWrites += 1;
      if (router.agent) await raiseChangeFlag(router.agent.uuid, 'microserviceConfig');
      logger.debug('router config written', {
        routerKey,
        listeners: desired.listeners.length,
        connectors: desired.connectors.length,
      });
      return { routerKey, managed: true, written: true, config: next };
    },
    {
      times: 20,
      exhausted: () =>
        new ContentionError(`Router config ${routerKey} kept changing under reconcile; will retry`),
    },
  );
}

/**
 * A router's stored config, and what it becomes with what the store says it should hold: an agent's
 * own part (identity, links, TLS) and the service bridges.
 */
async function plannedRouterConfig(
  router: ManagedRouter,
  defaultRouter: DefaultRouterRow | undefined,
  options: { current?: RouterConfigRow | null; site: boolean } = { site: true },
) {
  const [desired, current] = await Promise.all([
    desiredBridges(router),
    options.current !== undefined ? (options.current ?? undefined) : getRouterConfig(router.key),
  ]);
  // A router without a stored config always gets its site part; otherwise only when it may have moved.
  const site =
    router.agent && (options.site || !current) ? await desiredSite(router.agent, defaultRouter) : undefined;
  const base = current?.config ?? initialRouterConfig(router.key === router.hubKey);
  const withSite = site ? applyRouterSite(base, site) : base;
  return { current, base, next: applyDesiredBridges(withSite, desired), desired };
}

/**
 * An agent router's own part of its config: its identity and mode, the management and TLS listeners,
 * a link to each upstream router it can dial, and a TLS profile per certificate it holds.
 */
async function desiredSite(agent: AgentRow, defaultRouter: DefaultRouterRow | undefined) {
  if (agent.routerMode === 'none') return undefined;
  const specs = routerCertificateSpecs(agent);
  const [held, upstreams] = await Promise.all([
    Promise.all(specs.map((spec) => getCertificate(spec.name))),
    upstreamsOf(agent, defaultRouter),
  ]);
  return buildRouterSiteConfig({
    agent: {
      uuid: agent.uuid,
      token: agentCertificateToken(agent.name),
      routerMode: agent.routerMode,
      messagingPort: agent.messagingPort ?? DEFAULT_ROUTER_PORTS.messagingPort,
      interRouterPort: agent.interRouterPort ?? DEFAULT_ROUTER_PORTS.interRouterPort,
      edgeRouterPort: agent.edgeRouterPort ?? DEFAULT_ROUTER_PORTS.edgeRouterPort,
    },
    upstreams,
    certificates: new Set(specs.filter((_, i) => held[i]?.agentUuid === agent.uuid).map((spec) => spec.name)),
    namespace: config().controllerNamespace,
  });
}

/**
 * The routers an agent dials: `default-router` is the default router as registered (the system agent's
 * router, or the one PUT /api/v3/router describes), any other key an interior agent with a host.
 */
async function upstreamsOf(
  agent: AgentRow,
  defaultRouter: DefaultRouterRow | undefined,
): Promise<Upstream[]> {
  const upstreams: Upstream[] = [];
  for (const key of agent.upstreamRouters) {
    if (key === DEFAULT_ROUTER) {
      const hubKey = hubRouterKey(defaultRouter);
      if (!defaultRouter || !hubKey || hubKey === agent.uuid) continue;
      upstreams.push({ key: hubKey, host: defaultRouter.host, ...pick(defaultRouter) });
      continue;
    }
    const upstream = await getAgentRow(key);
    if (!upstream?.host || upstream.routerMode !== 'interior' || upstream.uuid === agent.uuid) continue;
    upstreams.push({ key: upstream.uuid, host: upstream.host, ...pick(upstream) });
  }
  return upstreams;
}

const pick = (router: { interRouterPort: number | null; edgeRouterPort: number | null }) => ({
  interRouterPort: router.interRouterPort ?? DEFAULT_ROUTER_PORTS.interRouterPort,
  edgeRouterPort: router.edgeRouterPort ?? DEFAULT_ROUTER_PORTS.edgeRouterPort,
});

/**
 * Whether a router holds other bridge entries than the store says it should: reads only, for the
 * sweeper's drift check. A router with nothing to manage has not drifted.
 */
export async function routerDrifted(
  routerKey: string,
  defaultRouter: DefaultRouterRow | undefined,
): Promise<boolean> {
  const router = await routerView(routerKey, defaultRouter);
  if (!router) return false;
  if (router.key === DEFAULT_ROUTER && config().controlPlane === 'kubernetes') {
    const current = await readHubConfigMap();
    const next = applyDesiredToSkrouterd(current, await desiredBridges(router));
    return JSON.stringify(next) !== JSON.stringify(current);
  }
  const { base, next } = await plannedRouterConfig(router, defaultRouter);
  return !sameRouterConfig(base, next);
}

/** The bridge entries a router should hold, computed from the store alone. */
export async function desiredBridges(router: RouterView): Promise<DesiredBridges> {
  const services = await candidateServices(router);
  const microservices = await backendMicroservices(router, services);
  const entries = services.map((service) => entriesFor(router, service, microservices.get(service.resource)));
  return {
    listeners: entries.flatMap((entry) => (entry.listener ? [entry.listener] : [])),
    connectors: entries.flatMap((entry) => (entry.connector ? [entry.connector] : [])),
  };
}

/** Every service that may place something on the router: hub, connector site, or selected by tags. */
async function candidateServices(router: RouterView): Promise<ServiceRow[]> {
  // An agent tagged `all` is a candidate for every live service: that one list covers the others.
  if (router.agent && selectsAll(router.agent)) return servicesSelectedByAgent(router.agent);
  // The hub answers for services bridged to `default-router` as well as to its own key.
  const keys =
    router.key === router.hubKey && router.key !== DEFAULT_ROUTER
      ? [router.key, DEFAULT_ROUTER]
      : [router.key];
  // Only an interior router (or the hub) can be a service's bridge; an edge router is never asked.
  const canBridge = !router.agent || router.agent.routerMode === 'interior' || router.key === router.hubKey;
  const lists = await Promise.all([
    ...(canBridge ? keys.map((key) => listServicesByHub(key)) : []),
    ...keys.map((key) => listServicesBySite(key)),
    router.agent ? servicesSelectedByAgent(router.agent) : Promise.resolve([]),
  ]);
  const byName = new Map<string, ServiceRow>();
  for (const service of lists.flat()) byName.set(service.name, service);
  return [...byName.values()];
}

/** The microservices behind this router's microservice connectors, as they are now. */
async function backendMicroservices(
  router: RouterView,
  services: ServiceRow[],
): Promise<Map<string, PlacedMicroservice>> {
  const uuids = services
    .filter((service) => service.type === 'microservice')
    .filter((service) => serviceSiteKey(service, router.hubKey) === router.key)
    .map((service) => service.resource);
  const rows = await Promise.all([...new Set(uuids)].map((uuid) => getMicroservice(uuid)));
  return new Map(rows.flatMap((row) => (row ? [[row.uuid, row] as const] : [])));
}

const selectsAll = (agent: { routerMode: AgentRow['routerMode']; tags: readonly string[] }) =>
  agent.routerMode !== 'none' &&
  agentDistributionTokens(agent.tags, config().serviceAnnotationTag).includes(DISTRIBUTION_ALL);

/** Services whose distribution tokens the agent's tags select (the agent → services direction). */
export async function servicesSelectedByAgent(agent: {
  routerMode: AgentRow['routerMode'];
  tags: readonly string[];
}): Promise<ServiceRow[]> {
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
