import { config } from '../context.js';
import { DISTRIBUTION_ALL, serviceDistributionTokens } from '../domain/distribution.js';
import { connectorRouterOf, DEFAULT_ROUTER, hubRouterKey, serviceHubKey } from '../domain/placement.js';
import {
  type ServiceSite,
  type SiteRole,
  type SitesPage,
  type SitesSummary,
  siteState,
} from '../domain/service-sites.js';
import type { ServicePlacement } from '../domain/topology.js';
import { getAgentStatuses } from '../store/agent-reports.js';
import { type AgentRow, getAgentRows, listAgentUuidsByToken } from '../store/agents.js';
import { listPendingSites, type PendingSite } from '../store/pending-sites.js';
import { getDefaultRouter } from '../store/routers.js';
import type { ServiceRow } from '../store/services.js';

/**
 * Per-site status of services: every agent that should hold a service's listener (it is the service's
 * hub, or its tags select the service) or its connector, and whether it has applied the service as it
 * is now. Read from the token index (who selects what), the pending-site markers (who has not applied
 * what) and, for the sites not applied, the agents' last status reports (who is offline): a few queries
 * whatever the number of agents, and one batched read of the sites still waiting.
 */

/** How many sites not yet applied a service read lists (the sites route pages through all of them). */
export const SITES_LISTED = 100;

/** What the sites of every service are read from, read once for all of them. */
interface SiteFacts {
  hubKey: string | undefined;
  /** Agent uuids by the token their tags select (`all` included). */
  selecting: Map<string, string[]>;
  /** Markers by agent: router-wide ones and one per service. */
  pending: Map<string, { router?: PendingSite; services: Map<string, PendingSite> }>;
}

async function readSiteFacts(rows: readonly ServiceRow[]): Promise<SiteFacts> {
  const tokens = new Set<string>();
  for (const row of rows) {
    if (row.bridgePort === null) continue;
    tokens.add(DISTRIBUTION_ALL);
    for (const token of serviceDistributionTokens(row.tags)) tokens.add(token);
  }
  const [defaultRouter, markers, ...lists] = await Promise.all([
    getDefaultRouter(),
    rows.length > 0 ? listPendingSites() : [],
    ...[...tokens].map((token) => listAgentUuidsByToken(token)),
  ]);
  const pending: SiteFacts['pending'] = new Map();
  for (const marker of markers) {
    const entry: { router?: PendingSite; services: Map<string, PendingSite> } = pending.get(
      marker.agentUuid,
    ) ?? { services: new Map() };
    if (marker.service === undefined) entry.router = marker;
    else entry.services.set(marker.service, marker);
    pending.set(marker.agentUuid, entry);
  }
  return {
    hubKey: hubRouterKey(defaultRouter),
    selecting: new Map([...tokens].map((token, index) => [token, lists[index] ?? []])),
    pending,
  };
}

/** The agents that should hold something of the service, with what each holds. */
function expectedSites(row: ServiceRow, facts: SiteFacts): Map<string, SiteRole[]> {
  const sites = new Map<string, SiteRole[]>();
  const add = (agentUuid: string | undefined, role: SiteRole) => {
    if (!agentUuid || agentUuid === DEFAULT_ROUTER) return;
    sites.set(agentUuid, [...(sites.get(agentUuid) ?? []), role]);
  };
  if (row.bridgePort !== null) add(serviceHubKey(row, facts.hubKey), 'hub');
  add(connectorRouterOf(row, facts.hubKey), 'connector');
  if (row.bridgePort !== null) {
    const selecting = new Set(
      [DISTRIBUTION_ALL, ...serviceDistributionTokens(row.tags)].flatMap(
        (token) => facts.selecting.get(token) ?? [],
      ),
    );
    for (const agentUuid of selecting) if (!sites.get(agentUuid)?.includes('hub')) add(agentUuid, 'listener');
  }
  return sites;
}

/**
 * Since when a site has not applied the service (undefined: it has): while the service's own reconcile
 * has not run, every site waits for it; after, a marker for the service or for the agent's whole router.
 */
function waitingSince(row: ServiceRow, agentUuid: string, facts: SiteFacts): string | undefined {
  if (row.observedGeneration < row.generation) return row.updatedAt;
  const markers = facts.pending.get(agentUuid);
  const times = [markers?.router?.since, markers?.services.get(row.name)?.since].filter(
    (since): since is string => since !== undefined,
  );
  return times.length > 0 ? times.sort()[0] : undefined;
}

/** The sites of `agentUuids`, their state read with the agents' last reports where needed. */
async function describeSites(
  row: ServiceRow,
  expected: Map<string, SiteRole[]>,
  agentUuids: readonly string[],
  facts: SiteFacts,
  options: { lastSeenOfApplied: boolean; names: boolean },
): Promise<ServiceSite[]> {
  const since = new Map(agentUuids.map((uuid) => [uuid, waitingSince(row, uuid, facts)]));
  // Every site's last report: one never heard from is never applied.
  const [reports, agents] = await Promise.all([
    getAgentStatuses(agentUuids),
    options.names ? getAgentRows(agentUuids) : new Map<string, AgentRow>(),
  ]);
  const now = Date.now();
  return agentUuids.map((agentUuid) => {
    const lastActive = reports.get(agentUuid)?.lastActive;
    const waiting = since.get(agentUuid);
    return {
      agentUuid,
      ...(agents.get(agentUuid) ? { name: agents.get(agentUuid)!.name } : {}),
      roles: expected.get(agentUuid) ?? [],
      ...siteState(
        {
          ...(waiting === undefined ? {} : { waitingSince: waiting }),
          firstConfig: facts.pending.get(agentUuid)?.router?.firstConfig === true,
          ...(lastActive === undefined ? {} : { lastActive }),
        },
        now,
        config().agentOfflineAfterMs,
      ),
    };
  });
}

/** The summary of each service's sites (`GET /api/v3/services`), from one read of the shared facts. */
export async function summarizeSites(rows: readonly ServiceRow[]): Promise<Map<string, SitesSummary>> {
  const facts = await readSiteFacts(rows);
  const waiting = new Map<string, Map<string, string>>();
  for (const row of rows) {
    const sites = new Map<string, string>();
    for (const agentUuid of expectedSites(row, facts).keys()) {
      const since = waitingSince(row, agentUuid, facts);
      if (since) sites.set(agentUuid, since);
    }
    waiting.set(row.name, sites);
  }
  const reports = await getAgentStatuses([...new Set([...waiting.values()].flatMap((m) => [...m.keys()]))]);
  const now = Date.now();
  const offlineAfter = config().agentOfflineAfterMs;
  return new Map(
    rows.map((row) => {
      const expected = expectedSites(row, facts).size;
      const states = [...(waiting.get(row.name) ?? new Map<string, string>()).entries()].map(
        ([agentUuid, since]) => {
          const lastActive = reports.get(agentUuid)?.lastActive;
          return siteState(
            {
              waitingSince: since,
              firstConfig: facts.pending.get(agentUuid)?.router?.firstConfig === true,
              ...(lastActive === undefined ? {} : { lastActive }),
            },
            now,
            offlineAfter,
          ).state;
        },
      );
      // A site whose first config is not written yet is pending it.
      const pending = states.filter((state) => state === 'pending' || state === 'new').length;
      const offline = states.filter((state) => state === 'offline').length;
      return [row.name, { expected, applied: expected - pending - offline, pending, offline }];
    }),
  );
}

/**
 * One service's sites as its read shows them: the summary and the first sites not applied (the
 * longest waiting first).
 */
export async function sitesOfService(
  row: ServiceRow,
): Promise<{ summary: SitesSummary; notApplied: ServiceSite[] }> {
  const facts = await readSiteFacts([row]);
  const expected = expectedSites(row, facts);
  const waiting = [...expected.keys()].filter((agentUuid) => waitingSince(row, agentUuid, facts));
  const sites = await describeSites(row, expected, waiting, facts, {
    lastSeenOfApplied: false,
    names: false,
  });
  sites.sort(
    (a, b) => (a.since ?? '').localeCompare(b.since ?? '') || a.agentUuid.localeCompare(b.agentUuid),
  );
  const listed = sites.slice(0, SITES_LISTED);
  const names = await getAgentRows(listed.map((site) => site.agentUuid));
  const pending = sites.filter((site) => site.state === 'pending').length;
  const offline = sites.filter((site) => site.state === 'offline').length;
  return {
    summary: { expected: expected.size, applied: expected.size - pending - offline, pending, offline },
    notApplied: listed.map((site) => {
      const name = names.get(site.agentUuid)?.name;
      return name ? { ...site, name } : site;
    }),
  };
}

/** Every site of a service, a page at a time in agent uuid order (`after`: the last uuid of a page). */
export async function pageSitesOfService(
  row: ServiceRow,
  after: string | undefined,
  limit: number,
): Promise<SitesPage> {
  const facts = await readSiteFacts([row]);
  const expected = expectedSites(row, facts);
  const ordered = [...expected.keys()].sort();
  const start = after === undefined ? 0 : ordered.findIndex((uuid) => uuid > after);
  const slice = start < 0 ? [] : ordered.slice(start, start + limit);
  const sites = await describeSites(row, expected, slice, facts, { lastSeenOfApplied: true, names: true });
  const last = slice.at(-1);
  const more = start >= 0 && start + limit < ordered.length;
  return { sites, ...(more && last ? { next: last } : {}) };
}

/**
 * Where a service is, site by site (the topology's `?service=` view): every agent site with what it
 * holds and its state, and the standalone default router when it holds the hub listener or the
 * connector (applied once the service is ready: the hub document is written before it is).
 */
export async function placementsOfService(
  row: ServiceRow,
  defaultRouter: { agentUuid: string | null } | undefined,
): Promise<ServicePlacement[]> {
  const facts = await readSiteFacts([row]);
  const expected = expectedSites(row, facts);
  const sites = await describeSites(row, expected, [...expected.keys()], facts, {
    lastSeenOfApplied: false,
    names: false,
  });
  const placements: ServicePlacement[] = sites.map((site) => ({
    site: site.agentUuid,
    roles: site.roles,
    state: site.state,
  }));
  if (defaultRouter && defaultRouter.agentUuid === null) {
    const roles: SiteRole[] = [];
    if (row.bridgePort !== null && serviceHubKey(row, DEFAULT_ROUTER) === DEFAULT_ROUTER) roles.push('hub');
    if (connectorRouterOf(row, DEFAULT_ROUTER) === DEFAULT_ROUTER) roles.push('connector');
    if (roles.length > 0) {
      placements.push({
        site: DEFAULT_ROUTER,
        roles,
        state: row.provisioningStatus === 'ready' ? 'applied' : 'pending',
      });
    }
  }
  return placements.sort((a, b) => a.site.localeCompare(b.site));
}
