import { config } from '../context.js';
import { routerPortsOf } from '../domain/agent-schema.js';
import {
  connectorRouterOf,
  DEFAULT_ROUTER,
  hubRouterKey,
  listenerSetsOfAgent,
  type PlacedMicroservice,
  type RouterEntries,
  type RouterView,
  storedEntriesFor,
} from '../domain/placement.js';
import {
  applyDesiredBridges,
  applyRouterSite,
  canonicalJson,
  composeRouterConfig,
  type DesiredBridges,
  entryChanges,
  initialRouterConfig,
  type RouterConfig,
  sameRouterConfig,
} from '../domain/router-config.js';
import { incompleteRouterConfig, routerContainer, routerStartDigest } from '../domain/router-microservice.js';
import { connectorName, listenerName } from '../domain/router-objects.js';
import {
  agentCertificateToken,
  buildRouterSiteConfig,
  routerCertificateSpecs,
  type Upstream,
  upstreamRouters,
} from '../domain/router-site.js';
import { type AgentRow, getAgentRow, getAgentRows } from '../store/agents.js';
import { getMicroservice } from '../store/applications.js';
import { getCertificate } from '../store/certificates.js';
import { batchGetItems, keys } from '../store/client.js';
import {
  type DefaultRouterRow,
  getRouterConfig,
  type RouterBaseParts,
  type RouterConfigRow,
  readStoredRouter,
} from '../store/routers.js';
import { listServicesByConnectorRouter, listServicesByHub, type ServiceRow } from '../store/services.js';

/**
 * What a router should hold, from the store: the router as placement sees it, its own part (identity,
 * links, TLS) and the entries stored under it, and what its stored parts become (a plan). Reads only;
 * writing a plan is router-write.ts's, comparing one with what is stored for the sweeper is drift.ts's.
 */

/** A router as placement sees it, with the whole agent row behind it (its own part needs it all). */
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

export const isKubernetesHub = (router: RouterView) =>
  router.key === DEFAULT_ROUTER && config().controlPlane === 'kubernetes';

async function backendOf(
  router: ManagedRouter,
  service: ServiceRow,
  known: { microservice?: PlacedMicroservice },
): Promise<PlacedMicroservice | undefined> {
  if (service.type !== 'microservice') return undefined;
  if (connectorRouterOf(service, router.hubKey) !== router.key) return undefined;
  return known.microservice ?? (await getMicroservice(service.resource));
}

/**
 * The entries a service's row (absent: a service that is gone) wants stored under a router: its hub
 * listener and its connector, with the backend it dials as it is now (`known`: already read).
 */
export async function wantedEntries(
  router: ManagedRouter,
  row: ServiceRow | undefined,
  known: { microservice?: PlacedMicroservice } = {},
): Promise<RouterEntries> {
  return row ? storedEntriesFor(router, row, await backendOf(router, row, known)) : {};
}

export function entriesOf(document: RouterConfig | undefined, serviceName: string): RouterEntries {
  const listener = document?.bridges?.tcpListeners?.[listenerName(serviceName)];
  const connector = document?.bridges?.tcpConnectors?.[connectorName(serviceName)];
  return { ...(listener ? { listener } : {}), ...(connector ? { connector } : {}) };
}

/**
 * What placement reads of a router besides the store's services: the hub key and its agent's router
 * mode. Its entries are a function of these; a change to anything else of the agent leaves them be.
 */
const placementBasis = (router: ManagedRouter) =>
  `hub=${router.hubKey ?? ''};mode=${router.agent?.routerMode ?? 'standalone'}`;

/**
 * A router's stored parts, and what they become with what the store says it should hold: an agent's own
 * part (identity, links, TLS, the distribution sets it selects) and the entries stored under it. With
 * `bridges: 'if-moved'` the entries are left as stored when they were last computed for the router as it
 * is (`bridgesFor`): only the base item is read and compared, not every service (`partial`).
 */
export async function plannedRouterConfig(
  router: ManagedRouter,
  defaultRouter: DefaultRouterRow | undefined,
  options: { ownPart: boolean; bridges: 'full' | 'if-moved' } = { ownPart: true, bridges: 'full' },
) {
  const bridgesFor = placementBasis(router);
  const selects = router.agent ? listenerSetsOfAgent(router.agent, router.tagPrefix) : [];
  if (options.bridges === 'if-moved') {
    const row = await getRouterConfig(router.key);
    if (row?.bridgesFor === bridgesFor) {
      const ownPart =
        router.agent && options.ownPart ? await desiredOwnPart(router.agent, defaultRouter) : undefined;
      const next = ownPart ? applyRouterSite(row.config, ownPart.config) : row.config;
      const none: DesiredBridges = { listeners: [], connectors: [] };
      const start = startOf(router, row, next, ownPart?.certificates);
      const changed =
        !sameRouterConfig(row.config, next) ||
        canonicalJson(row.selects ?? []) !== canonicalJson(selects) ||
        start.changed;
      return {
        stored: { row, entries: none },
        next,
        desired: none,
        changes: { put: [], remove: [] },
        changed,
        parts: { selects, bridgesFor, ...start.parts },
        restart: start.restart,
        partial: true,
      };
    }
  }
  const [wanted, stored] = await Promise.all([desiredBridges(router), readStoredRouter(router.key)]);
  const desired = await withoutLaggingRemovals(router, stored.entries, wanted);
  // A router without a stored config always gets its own part; otherwise only when it may have moved.
  const ownPart =
    router.agent && (options.ownPart || !stored.row)
      ? await desiredOwnPart(router.agent, defaultRouter)
      : undefined;
  const base = stored.row?.config ?? initialRouterConfig(router.key === router.hubKey);
  const stripped = applyDesiredBridges(base, { listeners: [], connectors: [] });
  const next = applyDesiredBridges(ownPart ? applyRouterSite(base, ownPart.config) : base, {
    listeners: [],
    connectors: [],
  });
  const changes = entryChanges(stored.entries, desired);
  const start = startOf(router, stored.row, next, ownPart?.certificates);
  const changed =
    changes.put.length > 0 ||
    changes.remove.length > 0 ||
    !sameRouterConfig(stripped, next) ||
    (!!stored.row && canonicalJson(stored.row.selects ?? []) !== canonicalJson(selects)) ||
    (!!stored.row && stored.row.bridgesFor !== bridgesFor) ||
    start.changed ||
    (!stored.row && (selects.length > 0 || desired.listeners.length + desired.connectors.length > 0));
  return {
    stored,
    next,
    desired,
    changes,
    changed,
    parts: { selects, bridgesFor, ...start.parts },
    restart: start.restart,
    partial: false,
  };
}

/**
 * What an agent's router starts with, as a plan leaves it (`routerStartDigest`), when the plan computed
 * its own part (`certificates`: the ones it holds); otherwise as stored. A router whose start moved
 * away from the one its agent was last told of owes a rebuild; a router's first config owes none (its
 * container is created from it).
 */
function startOf(
  router: ManagedRouter,
  row: RouterConfigRow | undefined,
  next: RouterConfig,
  certificates: readonly string[] | undefined,
): {
  parts: Pick<RouterBaseParts, 'startDigest' | 'startDigestTold'>;
  changed: boolean;
  restart?: { digest: string };
} {
  const agent = router.agent;
  if (!agent || agent.routerMode === 'none' || certificates === undefined) {
    const parts = {
      ...(row?.startDigest ? { startDigest: row.startDigest } : {}),
      ...(row?.startDigestTold ? { startDigestTold: row.startDigestTold } : {}),
    };
    return { parts, changed: false };
  }
  const container = routerContainer(
    { ...agent, routerMode: agent.routerMode },
    certificates,
    config().router,
  );
  const digest = routerStartDigest(next, container);
  // No router runs from a config it could not run (it is not listed): its first one is a fresh start.
  const needed = routerCertificateSpecs(agent).map((spec) => spec.name);
  const ran =
    !!row &&
    !incompleteRouterConfig(
      row.config,
      { uuid: agent.uuid, routerMode: agent.routerMode },
      new Set(needed),
      needed,
    );
  // A base written before digests were kept started its router from its stored config.
  const told = ran
    ? (row.startDigestTold ?? row.startDigest ?? routerStartDigest(row.config, container))
    : digest;
  return {
    parts: { startDigest: digest, startDigestTold: told },
    changed: !!row && (row.startDigest !== digest || row.startDigestTold !== told),
    ...(told !== digest ? { restart: { digest } } : {}),
  };
}

/** The router's config as a plan leaves it; undefined when the plan did not read its entries. */
export function viewOf(planned: Awaited<ReturnType<typeof plannedRouterConfig>>): RouterConfig | undefined {
  return planned.partial ? undefined : composeRouterConfig(planned.next, planned.desired, []);
}

/**
 * The index queries behind `desiredBridges` may lag the table: an entry they would remove stays while the
 * service's row, read consistently, still places something of it here (the service's own reconcile writes
 * it exactly).
 */
async function withoutLaggingRemovals(
  router: ManagedRouter,
  stored: DesiredBridges,
  wanted: DesiredBridges,
): Promise<DesiredBridges> {
  const wantedNames = new Set([...wanted.listeners, ...wanted.connectors].map((entry) => entry.name));
  const leaving = [...stored.listeners, ...stored.connectors].filter((entry) => !wantedNames.has(entry.name));
  const names = [...new Set(leaving.map((entry) => entry.address))];
  if (names.length === 0) return wanted;
  const rows = await batchGetItems<ServiceRow>(names.map((name) => keys.service(name)));
  const kept: DesiredBridges = { listeners: [...wanted.listeners], connectors: [...wanted.connectors] };
  for (const row of rows.values()) {
    const placed = await wantedEntries(router, row);
    if (placed.listener) kept.listeners.push(placed.listener);
    if (placed.connector) kept.connectors.push(placed.connector);
  }
  return kept;
}

/**
 * An agent router's own part of its config: its identity and mode, the management and TLS listeners,
 * a link to each upstream router it can dial, and a TLS profile per certificate it holds (`certificates`,
 * the names of those it holds, in the order its router mounts them).
 */
async function desiredOwnPart(agent: AgentRow, defaultRouter: DefaultRouterRow | undefined) {
  if (agent.routerMode === 'none') return undefined;
  const specs = routerCertificateSpecs(agent);
  const [held, upstreams] = await Promise.all([
    Promise.all(specs.map((spec) => getCertificate(spec.name))),
    upstreamsOf(agent, defaultRouter),
  ]);
  const certificates = specs.filter((_, i) => held[i]?.agentUuid === agent.uuid).map((spec) => spec.name);
  const ownPart = buildRouterSiteConfig({
    agent: {
      uuid: agent.uuid,
      token: agentCertificateToken(agent.name),
      routerMode: agent.routerMode,
      ...routerPortsOf(agent),
    },
    upstreams,
    certificates: new Set(certificates),
    namespace: config().controllerNamespace,
  });
  return { config: ownPart, certificates };
}

/** The routers an agent dials (`upstreamRouters`), the agent upstreams it names read from the store. */
async function upstreamsOf(
  agent: AgentRow,
  defaultRouter: DefaultRouterRow | undefined,
): Promise<Upstream[]> {
  const named = agent.upstreamRouters.filter((key) => key !== DEFAULT_ROUTER);
  const rows = named.length > 0 ? await getAgentRows(named) : new Map<string, AgentRow>();
  return upstreamRouters(agent, defaultRouter, (uuid) => rows.get(uuid));
}

/**
 * The bridge entries stored under a router, computed from the store alone: listeners for the services
 * it is hub for, connectors for the services whose backend it reaches. The listeners its tags select
 * live in the distribution sets, not here.
 */
export async function desiredBridges(router: RouterView): Promise<DesiredBridges> {
  const services = await candidateServices(router);
  const microservices = await backendMicroservices(router, services);
  const entries = services.map((service) =>
    storedEntriesFor(router, service, microservices.get(service.resource)),
  );
  return {
    listeners: entries.flatMap((entry) => (entry.listener ? [entry.listener] : [])),
    connectors: entries.flatMap((entry) => (entry.connector ? [entry.connector] : [])),
  };
}

/** Every service that may store something under the router: the ones it is hub or connector router for. */
async function candidateServices(router: RouterView): Promise<ServiceRow[]> {
  // The hub answers for services bridged to `default-router` as well as to its own key.
  const keys =
    router.key === router.hubKey && router.key !== DEFAULT_ROUTER
      ? [router.key, DEFAULT_ROUTER]
      : [router.key];
  // Only an interior router (or the hub) can be a service's bridge; an edge router is never asked.
  const canBridge = !router.agent || router.agent.routerMode === 'interior' || router.key === router.hubKey;
  const lists = await Promise.all([
    ...(canBridge ? keys.map((key) => listServicesByHub(key)) : []),
    ...keys.map((key) => listServicesByConnectorRouter(key)),
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
    .filter((service) => connectorRouterOf(service, router.hubKey) === router.key)
    .map((service) => service.resource);
  const rows = await Promise.all([...new Set(uuids)].map((uuid) => getMicroservice(uuid)));
  return new Map(rows.flatMap((row) => (row ? [[row.uuid, row] as const] : [])));
}
