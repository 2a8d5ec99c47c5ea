/**
 * A site's state, per service and in the topology alike. `applied`: the agent was heard from and
 * acknowledged the change that told it of everything it should hold, and owes its router no rebuild;
 * `pending`: not yet, and the agent was heard from recently; `offline`: not yet, and the agent has not
 * been heard from for longer than the offline threshold (or never was); `new`: its router's first config
 * is not written yet.
 */
export const SITE_STATES = ['applied', 'pending', 'offline', 'new'] as const;
export type SiteState = (typeof SITE_STATES)[number];

/** What a site holds of the service: its hub listener, its connector, or a listener its tags select. */
export const SITE_ROLES = ['hub', 'connector', 'listener'] as const;
export type SiteRole = (typeof SITE_ROLES)[number];

export interface SitesSummary {
  expected: number;
  applied: number;
  pending: number;
  offline: number;
}

export interface ServiceSite {
  agentUuid: string;
  name?: string;
  roles: SiteRole[];
  state: SiteState;
  /** Since when the site has not applied the service (ISO time); null once applied. */
  since: string | null;
  /** When the agent last reported its status (ISO time); null when it never did. */
  lastSeen: string | null;
}

export interface SitesPage {
  sites: ServiceSite[];
  /** Where the next page starts (`?after=`); absent on the last page. */
  next?: string;
}

/** What a site's state is decided from. */
export interface SiteStateFacts {
  /** Since when a marker says it waits (null: since an unknown time; absent: no marker). */
  waitingSince?: string | null;
  /** Its router's first config is not written yet. */
  firstConfig?: boolean;
  /** It owes its router a rebuild it has not acknowledged. */
  rebuildPending?: boolean;
  /** The change counter value of its last config change, and what it acknowledged (when read). */
  configVersion?: number;
  acknowledgedVersion?: number;
  /** When it last reported (epoch ms); absent: never. */
  lastActive?: number;
}

/**
 * A site's state, the one rule per-site status and the topology share: `new` while its first config is
 * not written; else `applied` only when it was heard from, no marker waits, no rebuild is owed and it
 * acknowledged its last config change; else `pending` or `offline` by when it was last heard from.
 */
export function siteState(
  facts: SiteStateFacts,
  now: number,
  offlineAfterMs: number,
): Pick<ServiceSite, 'state' | 'since' | 'lastSeen'> {
  const { waitingSince, lastActive } = facts;
  const lastSeen = lastActive === undefined ? null : new Date(lastActive).toISOString();
  if (facts.firstConfig) return { state: 'new', since: waitingSince ?? null, lastSeen };
  const behind =
    facts.configVersion !== undefined &&
    facts.acknowledgedVersion !== undefined &&
    facts.acknowledgedVersion < facts.configVersion;
  const waiting = waitingSince !== undefined || !!facts.rebuildPending || behind || lastActive === undefined;
  if (!waiting) return { state: 'applied', since: null, lastSeen };
  return {
    state: isOnline(lastActive, now, offlineAfterMs) ? 'pending' : 'offline',
    since: waitingSince ?? null,
    lastSeen,
  };
}

/** Whether an agent was heard from within the offline threshold (never heard from: not online). */
export const isOnline = (lastActive: number | undefined, now: number, offlineAfterMs: number): boolean =>
  lastActive !== undefined && now - lastActive <= offlineAfterMs;
