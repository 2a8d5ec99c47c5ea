/**
 * Per-site status of a service: for every agent that should hold its listener or connector, whether
 * that agent has applied the service as it is now. `applied`: the agent acknowledged a change counter
 * value at or after the write that put the service in its config, and owes its router no rebuild;
 * `pending`: not yet, and the agent was heard from recently; `offline`: not yet, and the agent has not
 * been heard from for longer than the offline threshold (or never was).
 */
export const SITE_STATES = ['applied', 'pending', 'offline'] as const;
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

/**
 * A site's state, the one rule per-site status and the topology share: from since when it waits
 * (undefined: it does not; null: it waits, since an unknown time) and when its agent was last heard
 * from (epoch ms).
 */
export function siteState(
  waitingSince: string | null | undefined,
  lastActive: number | undefined,
  now: number,
  offlineAfterMs: number,
): Pick<ServiceSite, 'state' | 'since' | 'lastSeen'> {
  const lastSeen = lastActive === undefined ? null : new Date(lastActive).toISOString();
  if (waitingSince === undefined) return { state: 'applied', since: null, lastSeen };
  return {
    state: isOnline(lastActive, now, offlineAfterMs) ? 'pending' : 'offline',
    since: waitingSince,
    lastSeen,
  };
}

/** Whether an agent was heard from within the offline threshold (never heard from: not online). */
export const isOnline = (lastActive: number | undefined, now: number, offlineAfterMs: number): boolean =>
  lastActive !== undefined && now - lastActive <= offlineAfterMs;
