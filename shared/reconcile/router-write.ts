import { config } from '../context.js';
import { hubRouterKey } from '../domain/placement.js';
import {
  type DesiredBridges,
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
import { type DefaultRouterRow, getDefaultRouter, markStartTold, putRouterParts } from '../store/routers.js';
import type { ServiceRow } from '../store/services.js';
import {
  desiredBridges,
  isKubernetesHub,
  type ManagedRouter,
  plannedRouterConfig,
  routerView,
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
   * `routerStartDigest`) and the agent was not yet told so. The caller tells the agent
   * (`tellOfRouterWrite`, or its own write raising `flagsOwedFor`), then calls `rebuildTold`.
   */
  restart?: { digest: string };
}

/**
 * How a router is to be computed: what the caller already read of it (`agent`, from the fog worker's
 * batch read), whether the agent's own part may have changed (`ownPart: false`: only bridges move, the
 * stored own part stays as it is), whether its entries are recomputed in full (the default) or only
 * when what placement reads of the router moved since they last were (`if-moved`: an agent change). A
 * write marks the agent as not having applied its router yet; what the agent is owed is returned
 * (`written`, `restart`) for the caller to tell once everything it changes for the agent is written.
 */
export interface RouterComputation {
  agent?: AgentRow;
  ownPart?: boolean;
  bridges?: 'full' | 'if-moved';
}

export async function reconcileRouter(
  routerKey: string,
  // A caller that has just read the default router passes it on instead of reading it again.
  knownDefaultRouter?: DefaultRouterRow,
  known: RouterComputation = {},
): Promise<RouterReconcileResult> {
  const defaultRouter = knownDefaultRouter ?? (await getDefaultRouter());
  const hubLock = routerKey === hubRouterKey(defaultRouter);
  // The hub's own part is recomputed on every computation of it.
  const inputs: RouterComputation = hubLock ? { ...known, ownPart: true } : known;
  return writeRouterBridges(routerKey, defaultRouter, inputs, hubLock);
}

/**
 * The hub document is written under the hub lock, so a burst of service reconciles queues on the lock
 * instead of on version conflicts.
 */
export async function underHubLock<T>(routerKey: string, write: () => Promise<T>): Promise<T> {
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
 * marker waits for its change counter as it is now, after the write); the caller tells it.
 */
async function markRouterPending(
  agentUuid: string,
  result: RouterReconcileResult,
): Promise<RouterReconcileResult> {
  await markSitePending(agentUuid, { router: true }, await changeCounterNow(agentUuid), { built: true });
  return result;
}

/**
 * After the raise that told the agent of a marked change (its stamp): the marker waits for that raise,
 * so no acknowledgement of something the agent was shown before it (a change acknowledged between the
 * marking and the telling) can clear it. A marker that such an acknowledgement removed is made again.
 */
export async function markTold(
  agentUuid: string,
  scope: PendingScope,
  stamp: number,
  options: { stillOwed?: boolean } = {},
): Promise<void> {
  // `stillOwed`: told of a write while a rebuild it owes is held; the marker keeps awaiting that.
  await markSitePending(agentUuid, scope, stamp - 1, options.stillOwed ? {} : { told: true });
}

/**
 * Tells the agent what a router computation owes it on its own: `microserviceConfig` for a write, and
 * for a change to what its router starts with `microserviceList` and the rebuild stamp, then records
 * the rebuild as told.
 */
export async function tellOfRouterWrite(agentUuid: string, result: RouterReconcileResult): Promise<void> {
  const flags = flagsOwedFor(result);
  if (flags.length === 0) return;
  await markTold(agentUuid, { router: true }, await raiseChangeFlags(agentUuid, flags));
  if (result.restart) await rebuildTold(agentUuid, result.restart);
}

/** The change flags a router computation owes its agent: its config for a write, and a rebuild's. */
export function flagsOwedFor(result: Pick<RouterReconcileResult, 'written' | 'restart'>): ChangeStamp[] {
  if (!result.written && !result.restart) return [];
  return ['microserviceConfig', ...(result.restart ? REBUILD_FLAGS : [])];
}

/** What a change to what a router starts with raises, besides `microserviceConfig`. */
const REBUILD_FLAGS = ['microserviceList', 'rebuildRouter'] as const satisfies readonly ChangeStamp[];

/** Marks the agent's change as unapplied, then raises `microserviceConfig` (and `also`). */
export async function tellAgentOfChange(
  agentUuid: string,
  scope: PendingScope,
  also: readonly ChangeStamp[],
): Promise<void> {
  await markSitePending(agentUuid, scope, await changeCounterNow(agentUuid));
  await markTold(agentUuid, scope, await raiseChangeFlags(agentUuid, ['microserviceConfig', ...also]));
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
      ownPart: known.ownPart ?? true,
      bridges: known.bridges ?? 'full',
    });
  // Nothing to change (a router with no config yet whose desired state is its default counts too): no
  // write, and no change flag for the agent to chase.
  const unchanged = async (planned: Awaited<ReturnType<typeof plan>>): Promise<RouterReconcileResult> => {
    const result = { routerKey, managed: true, written: false, config: viewOf(planned) };
    // A rebuild written but not yet told (the computation that wrote it stopped before telling).
    if (!planned.restart || !router.agent) return result;
    return markRouterPending(router.agent.uuid, { ...result, restart: planned.restart });
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
      const result = router.agent ? await markRouterPending(router.agent.uuid, written) : written;
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
export function routerConfigRetries(routerKey: string) {
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
