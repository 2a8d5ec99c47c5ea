import type { TcpConnector, TcpListener } from './router-objects.js';
import type { RouterSiteConfig } from './router-site.js';

/**
 * A router microservice config in object form. fogbridge owns the entries of `bridges` named
 * `*-listener` and `*-connector`; every other key and entry is preserved as found.
 */
export interface RouterConfig {
  bridges?: {
    tcpListeners?: Record<string, TcpListener>;
    tcpConnectors?: Record<string, TcpConnector>;
    [other: string]: unknown;
  };
  [other: string]: unknown;
}

export interface DesiredBridges {
  listeners: TcpListener[];
  connectors: TcpConnector[];
}

/** The two maps of managed bridge entries. */
export type BridgeMap = 'tcpListeners' | 'tcpConnectors';

/** Changes to a router's stored entries: entries to put, and entries (by map and name) to delete. */
export interface RouterEntryChanges {
  put: { map: BridgeMap; entry: TcpListener | TcpConnector }[];
  remove: { map: BridgeMap; name: string }[];
}

/**
 * The router model's one comparison of entries: whether two (a held one and a wanted one, either
 * absent) are the same entry, field for field whatever the key order.
 */
export function sameEntry(
  a: TcpListener | TcpConnector | undefined,
  b: TcpListener | TcpConnector | undefined,
): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

/** What turns `stored` entries into `desired` ones: every put and delete, nothing else. */
export function entryChanges(stored: DesiredBridges, desired: DesiredBridges): RouterEntryChanges {
  const changes: RouterEntryChanges = { put: [], remove: [] };
  for (const map of ['tcpListeners', 'tcpConnectors'] as const) {
    const of = (bridges: DesiredBridges) => (map === 'tcpListeners' ? bridges.listeners : bridges.connectors);
    const held = new Map<string, TcpListener | TcpConnector>(of(stored).map((entry) => [entry.name, entry]));
    const wanted = new Map<string, TcpListener | TcpConnector>(
      of(desired).map((entry) => [entry.name, entry]),
    );
    for (const [name, entry] of wanted)
      if (!sameEntry(held.get(name), entry)) changes.put.push({ map, entry });
    for (const name of held.keys()) if (!wanted.has(name)) changes.remove.push({ map, name });
  }
  return changes;
}

/** Whether a service's held entries on a router (either absent) are the ones it wants there. */
export function sameServiceEntries(
  held: { listener?: TcpListener; connector?: TcpConnector },
  wanted: { listener?: TcpListener; connector?: TcpConnector },
): boolean {
  return sameEntry(held.listener, wanted.listener) && sameEntry(held.connector, wanted.connector);
}

/** The config a hub (default router) starts with: both maps present, as the seed's hub document shows. */
export function emptyHubRouterConfig(): RouterConfig {
  return { bridges: { tcpListeners: {}, tcpConnectors: {} } };
}

/** What a router's config is before fogbridge first writes it: the hub's empty maps, else nothing. */
export function initialRouterConfig(isHub: boolean): RouterConfig {
  return isHub ? emptyHubRouterConfig() : {};
}

/**
 * Replace the managed bridge entries of `current` with `desired`. A map that exists is kept even when it
 * ends up empty; a missing map is only created when there is something to put in it.
 */
export function applyDesiredBridges(current: RouterConfig, desired: DesiredBridges): RouterConfig {
  const bridges = { ...(current.bridges ?? {}) };
  const listeners = replaceManaged(bridges.tcpListeners, desired.listeners, '-listener');
  const connectors = replaceManaged(bridges.tcpConnectors, desired.connectors, '-connector');
  if (listeners) bridges.tcpListeners = listeners;
  if (connectors) bridges.tcpConnectors = connectors;
  const next: RouterConfig = { ...current };
  if (Object.keys(bridges).length > 0 || current.bridges) next.bridges = bridges;
  return next;
}

function replaceManaged<T extends { name: string }>(
  existing: Record<string, T> | undefined,
  desired: readonly T[],
  suffix: string,
): Record<string, T> | undefined {
  if (!existing && desired.length === 0) return undefined;
  const kept = Object.entries(existing ?? {}).filter(([name]) => !name.endsWith(suffix));
  const wanted = [...desired]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((entry) => [entry.name, entry] as const);
  return Object.fromEntries([...kept, ...wanted]);
}

/**
 * A router's config as its router receives it, composed from what is stored apart: the base (its own
 * part and any entry fogbridge does not manage), the entries stored under the router, and the listeners
 * of the distribution sets it selects. One entry per name: a hub that also selects a service holds the
 * same listener twice over, once.
 */
export function composeRouterConfig(
  base: RouterConfig,
  stored: DesiredBridges,
  selected: readonly TcpListener[],
): RouterConfig {
  const listeners = new Map<string, TcpListener>();
  for (const entry of [...selected, ...stored.listeners]) listeners.set(entry.name, entry);
  return applyDesiredBridges(base, { listeners: [...listeners.values()], connectors: stored.connectors });
}

/**
 * Sets the router's own part of the config (identity, links, TLS profiles: `router-site.ts`) and makes
 * sure both bridge maps exist, as a router's full document always has them. `bridges` is left to
 * `applyDesiredBridges`; keys this module does not own stay as found.
 */
export function applyRouterSite(current: RouterConfig, site: RouterSiteConfig): RouterConfig {
  const next: RouterConfig = { ...current, ...site };
  next.bridges = { tcpListeners: {}, tcpConnectors: {}, ...(current.bridges ?? {}) };
  return next;
}

/** Structural equality of two configs, ignoring key order. */
export function sameRouterConfig(a: RouterConfig, b: RouterConfig): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)),
        )
      : v,
  );
}
