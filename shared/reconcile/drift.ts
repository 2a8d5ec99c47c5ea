import { type DesiredBridges, sameEntry, sameServiceEntries } from '../domain/router-config.js';
import { applyDesiredToSkrouterd } from '../domain/skrouterd.js';
import { readHubConfigMap } from '../k8s/hub-configmap.js';
import { batchGetItems, keys } from '../store/client.js';
import {
  type DefaultRouterRow,
  entriesFromItems,
  listRouterEntryPage,
  serviceEntryKeys,
} from '../store/routers.js';
import { getServiceRow, isConvergedService, type ServiceRow } from '../store/services.js';
import {
  desiredBridges,
  isKubernetesHub,
  type ManagedRouter,
  plannedRouterConfig,
  routerView,
  wantedEntries,
} from './router-plan.js';
import { readServiceEntries } from './router-service-entries.js';

/**
 * The sweeper's drift checks: whether a router (or the hub, a window at a time) holds other entries than
 * the store says it should. Reads only.
 */

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
  const own = await plannedRouterConfig(router, defaultRouter, { ownPart: true, bridges: 'if-moved' });
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
    const wanted = await wantedEntries(router, row);
    const want = map === 'tcpListeners' ? wanted.listener : wanted.connector;
    if (!sameEntry(want, entry)) suspects.add(service);
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
  const wanted = await wantedEntries(router, row);
  return !sameServiceEntries({ listener: stored.listeners[0], connector: stored.connectors[0] }, wanted);
}
