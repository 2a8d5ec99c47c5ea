import { randomUUID } from 'node:crypto';
import type { PlacedMicroservice, RouterEntries } from '../domain/placement.js';
import { type DesiredBridges, entryChanges, sameServiceEntries } from '../domain/router-config.js';
import { ContentionError } from '../errors.js';
import { faultPoint } from '../faults.js';
import { logger } from '../log/logger.js';
import { countEvent } from '../metrics/operations.js';
import { CONFLICT, retryOnConflict } from '../retry.js';
import type { AgentRow } from '../store/agents.js';
import { batchGetItems, keys } from '../store/client.js';
import {
  basePartsOf,
  type DefaultRouterRow,
  entriesFromItems,
  putRouterParts,
  type RouterConfigRow,
  serviceEntryKeys,
} from '../store/routers.js';
import { getServiceRow, type ServiceRow } from '../store/services.js';
import { outsideReadSnapshot } from '../store/snapshot.js';
import { inNextBatch } from './hub-batches.js';
import { entriesOf, isKubernetesHub, type ManagedRouter, routerView, wantedEntries } from './router-plan.js';
import { reconcileRouter, routerConfigRetries, tellAgentOfChange, underHubLock } from './router-write.js';

/**
 * One service's entries on one router, read and written on their own: what a service reconcile and a
 * service fan-out run, so neither reads (or rewrites) anything that grows with the number of services.
 * What the entries should be comes from router-plan.ts (`wantedEntries`); the hub lock, the retries and
 * telling the agent are router-write.ts's.
 */

/** One service's entries under one router, as read together with the router's base item. */
export interface StoredServiceEntries {
  row: RouterConfigRow | undefined;
  entries: DesiredBridges;
}

/** The router's base item and the service's two entries, in one batch read. */
export async function readServiceEntries(
  routerKey: string,
  serviceName: string,
): Promise<StoredServiceEntries> {
  const { row, entries } = await readEntriesOfServices(routerKey, [serviceName]);
  return { row, entries: entries[0]! };
}

export interface ServiceEntriesResult {
  managed: boolean;
  written: boolean;
  /** The service's entries the router holds now. */
  entries: RouterEntries;
  /**
   * The router has no stored config yet: one service's entries are not written alone; its whole
   * computation (which holds the service too) is the caller's to run or ask for.
   */
  routerNeeded?: boolean;
}

/**
 * Converges only one service's entries on one router: reads the router's base item and the service's two
 * entry items, computes what placement wants from the service row alone, and writes the difference with
 * a version bump. This is what a service reconcile and a service fan-out run, so neither reads (or
 * rewrites) anything that grows with the number of services. A router with no stored config yet is left
 * as it is (`routerNeeded`): its first computation is whole. The hub is written under the hub lock.
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
    // On Kubernetes the hub's document is the operator's ConfigMap, rewritten whole under the hub lock:
    // one computation serves every service that asked meanwhile (it reads every service's row afresh).
    return inNextBatch(
      `kubernetes-hub:${routerKey}`,
      serviceName,
      () => randomUUID(),
      async (names) => {
        const result = await reconcileRouter(routerKey, defaultRouter);
        return names.map((name) => ({
          managed: true,
          written: result.written,
          entries: entriesOf(result.config, name),
        }));
      },
    );
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
): Promise<ServiceEntriesResult & { entriesWritten?: boolean }> {
  const routerKey = router.key;
  const isHub = router.key === router.hubKey;
  const attempt = (stored: StoredServiceEntries, write: boolean) =>
    writeServiceEntries(router, serviceName, expected, stored, write);
  const finish = (
    result: Exclude<Awaited<ReturnType<typeof attempt>>, typeof CONFLICT>,
  ): ServiceEntriesResult & { entriesWritten?: boolean } =>
    result.needsFull
      ? { managed: true, written: false, entries: expected, routerNeeded: true }
      : { managed: true, written: result.written, entries: expected, entriesWritten: result.written };
  // Most asks find the entries as wanted: checked from what the caller read (the hub without its lock).
  const first = await attempt(prefetched ?? (await readServiceEntries(routerKey, serviceName)), !isHub);
  if (first !== CONFLICT && !first.needsWrite) return finish(first);
  if (isHub)
    return finish(
      await inNextBatch(
        `hub:${routerKey}`,
        { serviceName, expected },
        (ask) => ask.serviceName,
        (asks) => writeHubBatch(router, asks),
      ),
    );
  return retryOnConflict(async () => {
    // Read afresh (never from a read snapshot).
    const stored = await outsideReadSnapshot(() => readServiceEntries(routerKey, serviceName));
    const result = await attempt(stored, true);
    return result === CONFLICT ? CONFLICT : finish(result);
  }, routerConfigRetries(routerKey));
}

/** What one service's entries came to in a write: written, or not (the hub has no config yet). */
type EntriesOutcome = { written: boolean; needsFull?: boolean };

/**
 * One hold of the hub lock for a batch of services (see hub-batches.ts): their entries read afresh
 * with the hub's base item, every change of every one of them written together with one conditional
 * write of the base item; retried whole on a lost race.
 */
function writeHubBatch(
  router: ManagedRouter,
  asks: { serviceName: string; expected: RouterEntries }[],
): Promise<EntriesOutcome[]> {
  return underHubLock(router.key, () =>
    retryOnConflict(async () => {
      const stored = await outsideReadSnapshot(() =>
        readEntriesOfServices(
          router.key,
          asks.map((ask) => ask.serviceName),
        ),
      );
      const changes = asks.map((ask, index) =>
        entryChanges(stored.entries[index]!, {
          listeners: ask.expected.listener ? [ask.expected.listener] : [],
          connectors: ask.expected.connector ? [ask.expected.connector] : [],
        }),
      );
      const changed = changes.map((change) => change.put.length + change.remove.length > 0);
      if (!changed.some(Boolean)) return asks.map(() => ({ written: false }));
      if (!stored.row)
        return changed.map((needsFull) => ({ written: false, ...(needsFull ? { needsFull } : {}) }));
      faultPoint('router:before-write');
      // The batch's entries move; what the other services were computed for stays as it was.
      const all = {
        put: changes.flatMap((change) => change.put),
        remove: changes.flatMap((change) => change.remove),
      };
      if (
        !(await putRouterParts(
          router.key,
          stored.row.config,
          all,
          stored.row.version,
          basePartsOf(stored.row),
        ))
      )
        return CONFLICT;
      countEvent('hub write');
      logger.debug('hub entries written', { routerKey: router.key, services: asks.length });
      return changed.map((written) => ({ written }));
    }, routerConfigRetries(router.key)),
  );
}

/** The router's base item and each service's two entries, in one batch read. */
async function readEntriesOfServices(
  routerKey: string,
  serviceNames: readonly string[],
): Promise<{ row: RouterConfigRow | undefined; entries: DesiredBridges[] }> {
  const entryKeys = serviceNames.map((name) => serviceEntryKeys(routerKey, name));
  const found = await batchGetItems<Record<string, unknown>>([
    keys.routerConfig(routerKey),
    ...entryKeys.flatMap((entry) => [entry.listener, entry.connector]),
  ]);
  return {
    row: found.get(0) as RouterConfigRow | undefined,
    entries: serviceNames.map((_, index) =>
      entriesFromItems(found.get(1 + 2 * index), found.get(2 + 2 * index)),
    ),
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
  if (router.key === router.hubKey) countEvent('hub write');
  logger.debug('router entries written', { routerKey: router.key, serviceName });
  return { written: true };
}
