import { listenerSetsOfService, selectedListener } from '../domain/placement.js';
import { sameEntry } from '../domain/router-config.js';
import type { TcpListener } from '../domain/router-objects.js';
import type { Applied } from '../store/applied.js';
import { batchGetItems, keys } from '../store/client.js';
import { isConvergedService, type ServiceRow } from '../store/services.js';
import { syncTokenIndex } from '../store/token-index.js';
import type { Work } from './service-work.js';

/** A service's distribution sets: the listener every agent selecting it holds, once per token. */

/**
 * The token index and the distribution sets first, so that every agent the fan-out tells (and every
 * agent that reads its config later) finds the service's listener: one entry per set the service is in
 * (each of its tokens, and the every-service set agents tagged `all` read), each carrying the listener.
 * Returns the sets, and whether what they hold for the service changed (or an earlier reconcile changed
 * it and was interrupted before every selecting agent was told).
 */
export async function syncServiceSets(work: Work): Promise<{ sets: string[]; selectionChanged: boolean }> {
  const { row, applied } = work;
  const sets = row.deleted ? [] : listenerSetsOfService(row.tags);
  const listener = selectedListener(row);
  const selectionChanged =
    applied.selectionPending === true || (await setsDiffer(row.name, sets, listener, applied));
  // The pending mark is set with the new tokens' intent, in one write, before any set entry changes.
  await syncTokenIndex({ service: row.name }, sets, applied, listener, {
    markSelectionPending: selectionChanged && !applied.selectionPending,
  });
  return { sets, selectionChanged };
}

/**
 * The converged services among `rows` whose distribution sets lack their listener or hold another (a
 * lost write, a hand edit): reads only, every set entry of the window in one batched read, for the
 * sweeper's drift check.
 */
export async function servicesWithDriftedSets(rows: readonly ServiceRow[]): Promise<ServiceRow[]> {
  const converged = rows.filter(isConvergedService);
  const entries = converged.flatMap((row) =>
    listenerSetsOfService(row.tags).map((set) => ({ row, key: keys.serviceToken(set, row.name) })),
  );
  const found = await batchGetItems<{ listener?: TcpListener }>(entries.map((entry) => entry.key));
  const drifted = new Set(
    entries
      .filter(
        ({ row }, index) =>
          !found.has(index) || !sameEntry(found.get(index)?.listener, selectedListener(row)),
      )
      .map(({ row }) => row),
  );
  return converged.filter((row) => drifted.has(row));
}

/** Whether the sets hold anything else for the service than `listener` in each of `sets` and nowhere else. */
export async function setsDiffer(
  name: string,
  sets: string[],
  listener: TcpListener | undefined,
  applied: Applied,
): Promise<boolean> {
  if (applied.tokens.some((token) => !sets.includes(token))) return true;
  if (sets.length === 0) return false;
  const found = await batchGetItems<{ listener?: TcpListener }>(
    sets.map((set) => keys.serviceToken(set, name)),
  );
  return sets.some((_, index) => !found.has(index) || !sameEntry(found.get(index)?.listener, listener));
}
