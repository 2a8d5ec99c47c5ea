import { config } from '../context.js';
import { DEFAULT_ROUTER_PORTS } from '../domain/agent-schema.js';
import {
  DEFAULT_ROUTER,
  hubRouterKey,
  listenerSetsOfAgent,
  type PlacedMicroservice,
  type RouterEntries,
  type RouterView,
  serviceSiteKey,
  storedEntriesFor,
} from '../domain/placement.js';
import {
  applyDesiredBridges,
  applyRouterSite,
  canonicalJson,
  composeRouterConfig,
  type DesiredBridges,
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
import { type ChangeStamp, raiseChangeFlags } from '../store/changes.js';
import { batchGetItems, keys } from '../store/client.js';
import { withLock } from '../store/lock.js';
import { changeCounterNow, markSitePending, type PendingScope } from '../store/pending-sites.js';
import {
  basePartsOf,
  type DefaultRouterRow,
  entriesFromItems,
  entryChanges,
  getDefaultRouter,
  getRouterConfig,
  listRouterEntryPage,
  markStartTold,
  putRouterParts,
  type RouterBaseParts,
  type RouterConfigRow,
  type RouterEntryChanges,
  readStoredRouter,
  serviceEntryKeys,
} from '../store/routers.js';
import {
  getServiceRow,
  isConvergedService,
  listServicesByHub,
  listServicesBySite,
  type ServiceRow,
} from '../store/services.js';
import { outsideReadSnapshot } from '../store/snapshot.js';

export interface RouterReconcileResult {
  routerKey: string;
  /** False when the router has no config to manage (agent gone, router mode none, no default router). */
  managed: boolean;
  written: boolean;
  config: RouterConfig | undefined;
  /**
   * Whether the agent owes its router a rebuild: what it starts with changed (see
   * `routerStartDigest`) and the agent was not yet told so. A caller that tells the agent itself
   * (`tell: false`) raises `rebuildRouter` with its flags, then calls `rebuildTold`.
   */
  restart?: { digest: string };
}

export async function reconcileRouter(
  routerKey: string,
  // A caller that has just read the default router passes it on instead of reading it again.
  knownDefaultRouter?: DefaultRouterRow,
  known: KnownRouterInputs = {},
): Promise<RouterReconcileResult> {
  const defaultRouter = knownDefaultRouter ?? (await getDefaultRouter());
  const hubLock = routerKey === hubRouterKey(defaultRouter);
  // The hub's own part (its site) is recomputed on every computation of it.
  const inputs: KnownRouterInputs = hubLock ? { ...known, site: true } : known;
  return writeRouterBridges(routerKey, defaultRouter, inputs, hubLock);
}

/**
 * The hub document is written under the hub lock, so a burst of service reconciles queues on the lock
 * instead of on version conflicts.
 */
async function underHubLock<T>(routerKey: string, write: () => Promise<T>): Promise<T> {
  const { hubLockLeaseMs } = config();
  const result = await withLock(
    `hub:${routerKey}`,
    `${process.pid}:${Math.random().toString(36).slice(2)}`,
    { leaseMs: hubLockLeaseMs, waitMs: hubLockLeaseMs },
    write,
  );
  if (!result) throw new ContentionError(`The hub lock for router ${routerKey} stayed busy; will retry`);
  return result;
}

/**
 * After a write to an agent's router config: the agent is marked as not having applied it yet (the
 * marker waits for its change counter as it is now, after the write), then told (`microserviceConfig`,
 * and for a change to what its router starts with `microserviceList` and the rebuild stamp) unless the
 * caller tells it with a write of its own.
 */
async function tellOfWrite(
  agentUuid: string,
  result: RouterReconcileResult,
  tell: boolean,
): Promise<RouterReconcileResult> {
  if (!tell) {
    await markSitePending(agentUuid, { router: true }, await changeCounterNow(agentUuid));
    return result;
  }
  await tellAgentOfChange(agentUuid, { router: true }, result.restart ? REBUILD_FLAGS : []);
  if (result.restart) await rebuildTold(agentUuid, result.restart);
  return { ...result, restart: undefined };
}

/** What a change to what a router starts with raises, besides `microserviceConfig`. */
export const REBUILD_FLAGS = ['microserviceList', 'rebuildRouter'] as const satisfies readonly ChangeStamp[];

/** Marks the agent's change as unapplied, then raises `microserviceConfig` (and `also`). */
async function tellAgentOfChange(
  agentUuid: string,
  scope: PendingScope,
  also: readonly ChangeStamp[],
): Promise<void> {
  await markSitePending(agentUuid, scope, await changeCounterNow(agentUuid));
  await raiseChangeFlags(agentUuid, ['microserviceConfig', ...also]);
}

/**
 * Records that the agent was told to rebuild its router for `restart.digest` (its rebuild stamp is
 * raised): until then every computation of the router owes that rebuild, so a computation that stopped
 * between writing the config and telling the agent is finished by the next one.
 */
export async function rebuildTold(agentUuid: string, restart: { digest: string }): Promise<void> {
  await markStartTold(agentUuid, restart.digest);
}

/**
 * What a caller already read for this router (the fog worker reads them in one batch): the agent row,
 * whether the agent's own part of the config may have changed (`site: false`: only bridges move, the
 * stored site part stays as it is), and whether its entries are recomputed in full (the default) or only
 * when what placement reads of the router moved since they last were (`if-moved`: an agent change).
 */
export interface KnownRouterInputs {
  agent?: AgentRow;
  site?: boolean;
  bridges?: 'full' | 'if-moved';
  /**
   * Whether a write raises the agent's `microserviceConfig` flag itself (the default); false when the
   * caller raises it with a write of its own once everything it changes for the agent is written.
   */
  tell?: boolean;
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

const isKubernetesHub = (router: RouterView) =>
  router.key === DEFAULT_ROUTER && config().controlPlane === 'kubernetes';

/**
 * Converges a router's stored config to what the store says it should hold. The hub (`hubLock`) is
 * written under the hub lock, but checked without it first (consistent reads, no write): most full
 * computations of the hub find it as wanted and take no lock; one that has something to write takes the
 * lock and writes what it computed, conditioned on the version it read (a writer that got in between
 * makes it compute again, under the lock).
 */
async function writeRouterBridges(
  routerKey: string,
  defaultRouter: DefaultRouterRow | undefined,
  known: KnownRouterInputs = {},
  hubLock = false,
): Promise<RouterReconcileResult> {
  const router = await routerView(routerKey, defaultRouter, known.agent);
  if (!router) return { routerKey, managed: false, written: false, config: undefined };
  if (isKubernetesHub(router)) {
    // On Kubernetes the default router's document is the operator's ConfigMap.
    const apply = async (): Promise<RouterReconcileResult> => {
      const result = await applyHubConfigMap(await desiredBridges(router));
      if (result.written) usage.hubWrites += 1;
      return { routerKey, managed: true, written: result.written, config: result.view };
    };
    return hubLock ? underHubLock(routerKey, apply) : apply();
  }
  const isHub = router.key === router.hubKey;
  const plan = () =>
    plannedRouterConfig(router, defaultRouter, {
      site: known.site ?? true,
      bridges: known.bridges ?? 'full',
    });
  // Nothing to change (a router with no config yet whose desired state is its default counts too): no
  // write, and no change flag for the agent to chase.
  const unchanged = async (planned: Awaited<ReturnType<typeof plan>>): Promise<RouterReconcileResult> => {
    const result = { routerKey, managed: true, written: false, config: viewOf(planned) };
    // A rebuild written but not yet told (the computation that wrote it stopped before telling).
    if (!planned.restart || !router.agent) return result;
    return tellOfWrite(router.agent.uuid, { ...result, restart: planned.restart }, known.tell !== false);
  };
  let prepared = hubLock ? await plan() : undefined;
  if (prepared && !prepared.changed) return unchanged(prepared);
  const converge = () =>
    retryOnConflict(
      async () => {
        const planned = prepared ?? (await plan());
        prepared = undefined;
        if (!planned.changed) return unchanged(planned);
        const view = viewOf(planned);
        faultPoint('router:before-write');
        const version = planned.stored.row?.version ?? 0;
        if (!(await putRouterParts(routerKey, planned.next, planned.changes, version, planned.parts)))
          return CONFLICT;
        if (isHub) usage.hubWrites += 1;
        const written: RouterReconcileResult = {
          routerKey,
          managed: true,
          written: true,
          config: view,
          ...(planned.restart ? { restart: planned.restart } : {}),
        };
        const result = router.agent
          ? await tellOfWrite(router.agent.uuid, written, known.tell !== false)
          : written;
        // Rows read before the write may have changed while it was made: recompute if any now disagrees.
        if (!(await stillPlaced(router, planned.changes, planned.desired))) return CONFLICT;
        logger.debug('router config written', {
          routerKey,
          put: planned.changes.put.length,
          removed: planned.changes.remove.length,
          restart: !!planned.restart,
        });
        return result;
      },
      {
        times: 20,
        exhausted: () =>
          new ContentionError(`Router config ${routerKey} kept changing under reconcile; will retry`),
      },
    );
  return hubLock ? underHubLock(routerKey, converge) : converge();
}

/**
 * Whether the services whose entries a write changed still want exactly those entries on the router,
 * by their rows read now (consistently).
 */
async function stillPlaced(
  router: ManagedRouter,
  changes: RouterEntryChanges,
  desired: DesiredBridges,
): Promise<boolean> {
  const names = [
    ...new Set([
      ...changes.put.map((change) => change.entry.address),
      ...changes.remove.map((change) => change.name.replace(/-(listener|connector)$/, '')),
    ]),
  ];
  if (names.length === 0) return true;
  const rows = await batchGetItems<ServiceRow>(names.map((name) => keys.service(name)));
  for (const [index, name] of names.entries()) {
    const row = rows.get(index);
    const wanted = row ? storedEntriesFor(router, row, await backendOf(router, row, {})) : {};
    const written = {
      listener: desired.listeners.find((entry) => entry.name === listenerName(name)),
      connector: desired.connectors.find((entry) => entry.name === connectorName(name)),
    };
    if (canonicalJson(wanted.listener) !== canonicalJson(written.listener)) return false;
    if (canonicalJson(wanted.connector) !== canonicalJson(written.connector)) return false;
  }
  return true;
}

/** One service's entries under one router, as read together with the router's base item. */
export interface StoredServiceEntries {
  row: RouterConfigRow | undefined;
  entries: DesiredBridges;
}

export interface ServiceEntriesResult {
  managed: boolean;
  written: boolean;
  /** The service's entries the router holds now. */
  entries: RouterEntries;
}

/**
 * Converges only one service's entries on one router: reads the router's base item and the service's two
 * entry items, computes what placement wants from the service row alone, and writes the difference with
 * a version bump. This is what a service reconcile and a service fan-out run, so neither reads (or
 * rewrites) anything that grows with the number of services. A router with no stored config yet gets its
 * first full computation instead. The hub is written under the hub lock.
 */
export async function reconcileRouterForService(
  routerKey: string,
  service: ServiceRow | undefined,
  serviceName: string,
  defaultRouter: DefaultRouterRow | undefined,
  known: { agent?: AgentRow; stored?: StoredServiceEntries; microservice?: PlacedMicroservice } = {},
): Promise<ServiceEntriesResult> {
  const router = await routerView(routerKey, defaultRouter, known.agent);
  if (!router) return { managed: false, written: false, entries: {} };
  if (isKubernetesHub(router)) {
    const result = await underHubLock(routerKey, () => writeRouterBridges(routerKey, defaultRouter));
    return { managed: true, written: result.written, entries: entriesOf(result.config, serviceName) };
  }
  let row = service;
  let stored = known.stored;
  let microservice = known.microservice;
  for (let round = 0; ; round++) {
    const expected = row ? storedEntriesFor(router, row, await backendOf(router, row, { microservice })) : {};
    const result = await writeServiceEntriesOnce(router, serviceName, expected, stored, defaultRouter);
    if (!result.written) return result;
    // The row this was computed from may have changed while it was written (another writer of this
    // router saw the newer row, found nothing to do, and finished first): what was written stands only
    // if the row read now wants the same.
    const fresh = await outsideReadSnapshot(() => getServiceRow(serviceName));
    const wanted = fresh ? storedEntriesFor(router, fresh, await backendOf(router, fresh, {})) : {};
    if (canonicalJson(wanted) === canonicalJson(expected)) return result;
    if (round >= 20)
      throw new ContentionError(
        `Service ${serviceName} kept changing under reconcile of ${routerKey}; will retry`,
      );
    row = fresh;
    stored = undefined;
    microservice = undefined;
  }
}

/** One convergence of a service's entries from `expected`: unlocked check first, then locked write on the hub. */
async function writeServiceEntriesOnce(
  router: ManagedRouter,
  serviceName: string,
  expected: RouterEntries,
  prefetched: StoredServiceEntries | undefined,
  defaultRouter: DefaultRouterRow | undefined,
): Promise<ServiceEntriesResult> {
  const routerKey = router.key;
  const isHub = router.key === router.hubKey;
  const attempt = (stored: StoredServiceEntries, write: boolean) =>
    writeServiceEntries(router, serviceName, expected, stored, write);
  const finish = async (
    result: Exclude<Awaited<ReturnType<typeof attempt>>, typeof CONFLICT>,
  ): Promise<ServiceEntriesResult> => {
    if (!result.needsFull) return { managed: true, written: result.written, entries: expected };
    const full = await writeRouterBridges(
      routerKey,
      defaultRouter,
      router.agent ? { agent: router.agent } : {},
    );
    return { managed: full.managed, written: full.written, entries: expected };
  };
  // Most asks find the entries as wanted: checked from what the caller read (the hub without its lock).
  const first = await attempt(prefetched ?? (await readServiceEntries(routerKey, serviceName)), !isHub);
  if (first !== CONFLICT && !first.needsWrite) return finish(first);
  const write = () =>
    retryOnConflict(
      async () => {
        // Read afresh (never from a read snapshot): on the hub this runs under the lock.
        const stored = await outsideReadSnapshot(() => readServiceEntries(routerKey, serviceName));
        const result = await attempt(stored, true);
        return result === CONFLICT ? CONFLICT : finish(result);
      },
      {
        times: 20,
        exhausted: () =>
          new ContentionError(`Router config ${routerKey} kept changing under reconcile; will retry`),
      },
    );
  return isHub ? underHubLock(routerKey, write) : write();
}

async function backendOf(
  router: ManagedRouter,
  service: ServiceRow,
  known: { microservice?: PlacedMicroservice },
): Promise<PlacedMicroservice | undefined> {
  if (service.type !== 'microservice') return undefined;
  if (serviceSiteKey(service, router.hubKey) !== router.key) return undefined;
  return known.microservice ?? (await getMicroservice(service.resource));
}

/** The router's base item and the service's two entries, in one batch read. */
export async function readServiceEntries(
  routerKey: string,
  serviceName: string,
): Promise<StoredServiceEntries> {
  const entryKeys = serviceEntryKeys(routerKey, serviceName);
  const found = await batchGetItems<Record<string, unknown>>([
    keys.routerConfig(routerKey),
    entryKeys.listener,
    entryKeys.connector,
  ]);
  return {
    row: found.get(0) as RouterConfigRow | undefined,
    entries: entriesFromItems(found.get(1), found.get(2)),
  };
}

/**
 * One attempt at writing a service's entries: CONFLICT on a lost race, `needsWrite` when the check
 * without the lock found something to write (`write: false`), `needsFull` when the router has no stored
 * config yet.
 */
async function writeServiceEntries(
  router: ManagedRouter,
  serviceName: string,
  expected: RouterEntries,
  stored: StoredServiceEntries,
  write: boolean,
): Promise<typeof CONFLICT | { written: boolean; needsWrite?: boolean; needsFull?: boolean }> {
  const changes = entryChanges(stored.entries, {
    listeners: expected.listener ? [expected.listener] : [],
    connectors: expected.connector ? [expected.connector] : [],
  });
  if (changes.put.length === 0 && changes.remove.length === 0) return { written: false };
  if (!write) return { written: false, needsWrite: true };
  if (!stored.row) return { written: false, needsFull: true };
  faultPoint('router:before-write');
  // One service's entries move; what the others were computed for stays as it was.
  const parts = basePartsOf(stored.row);
  if (!(await putRouterParts(router.key, stored.row.config, changes, stored.row.version, parts)))
    return CONFLICT;
  if (router.key === router.hubKey) usage.hubWrites += 1;
  if (router.agent) await tellAgentOfChange(router.agent.uuid, { service: serviceName }, []);
  logger.debug('router entries written', { routerKey: router.key, serviceName });
  return { written: true };
}

function entriesOf(document: RouterConfig | undefined, serviceName: string): RouterEntries {
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
async function plannedRouterConfig(
  router: ManagedRouter,
  defaultRouter: DefaultRouterRow | undefined,
  options: { site: boolean; bridges: 'full' | 'if-moved' } = { site: true, bridges: 'full' },
) {
  const bridgesFor = placementBasis(router);
  const selects = router.agent ? listenerSetsOfAgent(router.agent, router.tagPrefix) : [];
  if (options.bridges === 'if-moved') {
    const row = await getRouterConfig(router.key);
    if (row?.bridgesFor === bridgesFor) {
      const site = router.agent && options.site ? await desiredSite(router.agent, defaultRouter) : undefined;
      const next = site ? applyRouterSite(row.config, site.config) : row.config;
      const none: DesiredBridges = { listeners: [], connectors: [] };
      const start = startOf(router, row, next, site?.certificates);
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
  // A router without a stored config always gets its site part; otherwise only when it may have moved.
  const site =
    router.agent && (options.site || !stored.row)
      ? await desiredSite(router.agent, defaultRouter)
      : undefined;
  const base = stored.row?.config ?? initialRouterConfig(router.key === router.hubKey);
  const stripped = applyDesiredBridges(base, { listeners: [], connectors: [] });
  const next = applyDesiredBridges(site ? applyRouterSite(base, site.config) : base, {
    listeners: [],
    connectors: [],
  });
  const changes = entryChanges(stored.entries, desired);
  const start = startOf(router, stored.row, next, site?.certificates);
  const changed =
    changes.put.length > 0 ||
    changes.remove.length > 0 ||
    !sameRouterConfig(stripped, next) ||
    // The managed entries an older layout kept inside the base item go once it is rewritten.
    !sameRouterConfig(stripped, base) ||
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
 * its site part (`certificates`: the ones it holds); otherwise as stored. A router whose start moved
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
function viewOf(planned: Awaited<ReturnType<typeof plannedRouterConfig>>): RouterConfig | undefined {
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
    const placed = storedEntriesFor(router, row, await backendOf(router, row, {}));
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
async function desiredSite(agent: AgentRow, defaultRouter: DefaultRouterRow | undefined) {
  if (agent.routerMode === 'none') return undefined;
  const specs = routerCertificateSpecs(agent);
  const [held, upstreams] = await Promise.all([
    Promise.all(specs.map((spec) => getCertificate(spec.name))),
    upstreamsOf(agent, defaultRouter),
  ]);
  const certificates = specs.filter((_, i) => held[i]?.agentUuid === agent.uuid).map((spec) => spec.name);
  const site = buildRouterSiteConfig({
    agent: {
      uuid: agent.uuid,
      token: agentCertificateToken(agent.name),
      routerMode: agent.routerMode,
      messagingPort: agent.messagingPort ?? DEFAULT_ROUTER_PORTS.messagingPort,
      interRouterPort: agent.interRouterPort ?? DEFAULT_ROUTER_PORTS.interRouterPort,
      edgeRouterPort: agent.edgeRouterPort ?? DEFAULT_ROUTER_PORTS.edgeRouterPort,
    },
    upstreams,
    certificates: new Set(certificates),
    namespace: config().controllerNamespace,
  });
  return { config: site, certificates };
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
  if (isKubernetesHub(router)) {
    const current = await readHubConfigMap();
    const next = applyDesiredToSkrouterd(current, await desiredBridges(router));
    return JSON.stringify(next) !== JSON.stringify(current);
  }
  return (await plannedRouterConfig(router, defaultRouter)).changed;
}

/**
 * The hub's drift check, in windows, so that what a sweep reads is bounded by its windows however many
 * services the hub serves: the hub's own part (its base item) as an agent change compares it; the
 * entries each converged service of `services` (the sweep's window of services) wants on the hub
 * against what the hub holds for it; and up to `entryWindow` of the entries the hub holds, from
 * `cursor`, against the services they name (an entry whose service is gone, or that its converged
 * service does not want there). An entry of a service still converging is left to that service's
 * reconcile. A Kubernetes hub, the operator's ConfigMap read whole anyway, is compared whole.
 */
export async function hubDriftedInWindows(
  hubKey: string,
  defaultRouter: DefaultRouterRow | undefined,
  services: readonly ServiceRow[],
  cursor: Record<string, unknown> | undefined,
  entryWindow: number,
): Promise<{ drifted: boolean; next: Record<string, unknown> | undefined }> {
  const router = await routerView(hubKey, defaultRouter);
  if (!router) return { drifted: false, next: undefined };
  if (isKubernetesHub(router)) return { drifted: await routerDrifted(hubKey, defaultRouter), next: cursor };
  const own = await plannedRouterConfig(router, defaultRouter, { site: true, bridges: 'if-moved' });
  if (own.changed) return { drifted: true, next: cursor };
  const converged = services.filter(isConvergedService);
  const [page, held] = await Promise.all([
    listRouterEntryPage(hubKey, cursor, entryWindow),
    batchGetItems<Record<string, unknown>>(
      converged.flatMap((row) => Object.values(serviceEntryKeys(hubKey, row.name))),
    ),
  ]);
  const suspects = new Set<string>();
  for (const [index, row] of converged.entries()) {
    const stored = entriesFromItems(held.get(2 * index), held.get(2 * index + 1));
    if (await entriesDiffer(router, row, stored)) suspects.add(row.name);
  }
  const names = [...new Set(page.entries.map((entry) => entry.service))];
  const rows = await batchGetItems<ServiceRow>(names.map((name) => keys.service(name)));
  const byName = new Map([...rows.values()].map((row) => [row.name, row]));
  for (const { service, map, entry } of page.entries) {
    const row = byName.get(service);
    if (row && !isConvergedService(row)) continue;
    const wanted = row ? storedEntriesFor(router, row, await backendOf(router, row, {})) : {};
    const want = map === 'tcpListeners' ? wanted.listener : wanted.connector;
    if (canonicalJson(want) !== canonicalJson(entry)) suspects.add(service);
  }
  // A suspect is read again, its row and its entries together: a reconcile may have moved both since
  // (and the window of services comes from an index, which may lag the rows).
  for (const name of suspects) {
    const [row, stored] = await Promise.all([getServiceRow(name), readServiceEntries(hubKey, name)]);
    if (row && !isConvergedService(row)) continue;
    if (await entriesDiffer(router, row, stored.entries)) return { drifted: true, next: page.next };
  }
  return { drifted: false, next: page.next };
}

/** Whether a router holds other entries for a service than its row (absent: none) wants there. */
async function entriesDiffer(
  router: ManagedRouter,
  row: ServiceRow | undefined,
  stored: DesiredBridges,
): Promise<boolean> {
  const wanted = row ? storedEntriesFor(router, row, await backendOf(router, row, {})) : {};
  return (
    canonicalJson(wanted.listener) !== canonicalJson(stored.listeners[0]) ||
    canonicalJson(wanted.connector) !== canonicalJson(stored.connectors[0])
  );
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

/** Every service that may store something under the router: the ones it is hub or connector site for. */
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
    ...keys.map((key) => listServicesBySite(key)),
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
