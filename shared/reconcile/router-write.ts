import { config } from '../context.js';
import { hubRouterKey, type PlacedMicroservice, type RouterEntries } from '../domain/placement.js';
import {
  type DesiredBridges,
  entryChanges,
  type RouterConfig,
  type RouterEntryChanges,
  sameServiceEntries,
} from '../domain/router-config.js';
import { connectorName, listenerName } from '../domain/router-objects.js';
import { ContentionError } from '../errors.js';
import { faultPoint } from '../faults.js';
import { applyHubConfigMap } from '../k8s/hub-configmap.js';
import { logger } from '../log/logger.js';
import { countEvent } from '../metrics/operations.js';
import { CONFLICT, retryOnConflict } from '../retry.js';
import type { AgentRow } from '../store/agents.js';
import { type ChangeStamp, raiseChangeFlags } from '../store/changes.js';
import { batchGetItems, keys } from '../store/client.js';
import { withLock } from '../store/lock.js';
import { changeCounterNow, markSitePending, type PendingScope } from '../store/pending-sites.js';
import {
  basePartsOf,
  type DefaultRouterRow,
  getDefaultRouter,
  markStartTold,
  putRouterParts,
} from '../store/routers.js';
import { getServiceRow, type ServiceRow } from '../store/services.js';
import { outsideReadSnapshot } from '../store/snapshot.js';
import {
  desiredBridges,
  entriesOf,
  isKubernetesHub,
  type ManagedRouter,
  plannedRouterConfig,
  readServiceEntries,
  routerView,
  type StoredServiceEntries,
  viewOf,
  wantedEntries,
} from './router-plan.js';

/**
 * How a router's config is written: one version-conditioned convergence that owns its retries, the hub
 * lock and the Kubernetes hub, and tells the agent (or leaves that to the caller). What to write comes
 * from router-plan.ts.
 */

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

/**
 * How a router is to be computed: what the caller already read of it (`agent`, from the fog worker's
 * batch read), whether the agent's own part may have changed (`site: false`: only bridges move, the
 * stored site part stays as it is), whether its entries are recomputed in full (the default) or only
 * when what placement reads of the router moved since they last were (`if-moved`: an agent change), and
 * whether a write tells the agent itself (`tell`, the default) or leaves that to the caller, which then
 * raises the flags with a write of its own once everything it changes for the agent is written.
 */
export interface RouterComputation {
  agent?: AgentRow;
  site?: boolean;
  bridges?: 'full' | 'if-moved';
  tell?: boolean;
}

export async function reconcileRouter(
  routerKey: string,
  // A caller that has just read the default router passes it on instead of reading it again.
  knownDefaultRouter?: DefaultRouterRow,
  known: RouterComputation = {},
): Promise<RouterReconcileResult> {
  const defaultRouter = knownDefaultRouter ?? (await getDefaultRouter());
  const hubLock = routerKey === hubRouterKey(defaultRouter);
  // The hub's own part (its site) is recomputed on every computation of it.
  const inputs: RouterComputation = hubLock ? { ...known, site: true } : known;
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
 * Converges a router's stored config to what the store says it should hold. The hub (`hubLock`) is
 * written under the hub lock, but checked without it first (consistent reads, no write): most full
 * computations of the hub find it as wanted and take no lock; one that has something to write takes the
 * lock and writes what it computed, conditioned on the version it read (a writer that got in between
 * makes it compute again, under the lock).
 */
async function writeRouterBridges(
  routerKey: string,
  defaultRouter: DefaultRouterRow | undefined,
  known: RouterComputation = {},
  hubLock = false,
): Promise<RouterReconcileResult> {
  const router = await routerView(routerKey, defaultRouter, known.agent);
  if (!router) return { routerKey, managed: false, written: false, config: undefined };
  if (isKubernetesHub(router)) {
    // On Kubernetes the default router's document is the operator's ConfigMap.
    const apply = async (): Promise<RouterReconcileResult> => {
      const result = await applyHubConfigMap(await desiredBridges(router));
      if (result.written) countEvent('hub write');
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
    retryOnConflict(async () => {
      const planned = prepared ?? (await plan());
      prepared = undefined;
      if (!planned.changed) return unchanged(planned);
      const view = viewOf(planned);
      faultPoint('router:before-write');
      const version = planned.stored.row?.version ?? 0;
      if (!(await putRouterParts(routerKey, planned.next, planned.changes, version, planned.parts)))
        return CONFLICT;
      if (isHub) countEvent('hub write');
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
    }, routerConfigRetries(routerKey));
  return hubLock ? underHubLock(routerKey, converge) : converge();
}

/** How often a router config write is tried again after losing a race, and the error when it gives up. */
function routerConfigRetries(routerKey: string) {
  return {
    times: 20,
    exhausted: () =>
      new ContentionError(`Router config ${routerKey} kept changing under reconcile; will retry`),
  };
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
    const wanted = await wantedEntries(router, row);
    const written = {
      listener: desired.listeners.find((entry) => entry.name === listenerName(name)),
      connector: desired.connectors.find((entry) => entry.name === connectorName(name)),
    };
    if (!sameServiceEntries(wanted, written)) return false;
  }
  return true;
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
  return retryOnConflict(
    async () => {
      const expected = await wantedEntries(router, row, { microservice });
      const { entriesWritten, ...result } = await writeServiceEntriesOnce(
        router,
        serviceName,
        expected,
        stored,
        defaultRouter,
      );
      if (!result.written) return result;
      // The row this was computed from may have changed while it was written (another writer of this
      // router saw the newer row, found nothing to do, and finished first): what was written stands only
      // if the row read now wants the same. The agent is told of the write meanwhile (a full write told
      // it already).
      const [fresh] = await Promise.all([
        outsideReadSnapshot(() => getServiceRow(serviceName)),
        entriesWritten && router.agent
          ? tellAgentOfChange(router.agent.uuid, { service: serviceName }, [])
          : undefined,
      ]);
      if (sameServiceEntries(await wantedEntries(router, fresh), expected)) return result;
      row = fresh;
      stored = undefined;
      microservice = undefined;
      return CONFLICT;
    },
    {
      times: 21,
      exhausted: () =>
        new ContentionError(
          `Service ${serviceName} kept changing under reconcile of ${routerKey}; will retry`,
        ),
    },
  );
}

/**
 * One convergence of a service's entries from `expected`: unlocked check first, then locked write on the
 * hub. `entriesWritten` when this service's entries were written: the caller tells the router's agent,
 * after the hub lock is released (telling takes three calls that need no lock, and every service of the
 * hub waits for the lock in turn).
 */
async function writeServiceEntriesOnce(
  router: ManagedRouter,
  serviceName: string,
  expected: RouterEntries,
  prefetched: StoredServiceEntries | undefined,
  defaultRouter: DefaultRouterRow | undefined,
): Promise<ServiceEntriesResult & { entriesWritten?: boolean }> {
  const routerKey = router.key;
  const isHub = router.key === router.hubKey;
  const attempt = (stored: StoredServiceEntries, write: boolean) =>
    writeServiceEntries(router, serviceName, expected, stored, write);
  const finish = async (
    result: Exclude<Awaited<ReturnType<typeof attempt>>, typeof CONFLICT>,
  ): Promise<ServiceEntriesResult & { entriesWritten?: boolean }> => {
    if (!result.needsFull)
      return { managed: true, written: result.written, entries: expected, entriesWritten: result.written };
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
    retryOnConflict(async () => {
      // Read afresh (never from a read snapshot): on the hub this runs under the lock.
      const stored = await outsideReadSnapshot(() => readServiceEntries(routerKey, serviceName));
      const result = await attempt(stored, true);
      return result === CONFLICT ? CONFLICT : finish(result);
    }, routerConfigRetries(routerKey));
  return isHub ? underHubLock(routerKey, write) : write();
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
  if (router.key === router.hubKey) countEvent('hub write');
  logger.debug('router entries written', { routerKey: router.key, serviceName });
  return { written: true };
}
