import { config } from '../context.js';
import { agentDistributionTokens, agentSelectsService } from '../domain/distribution.js';
import { connectorRouterOf, hubRouterKey, serviceHubKey } from '../domain/placement.js';
import type { RouterSiteConfig } from '../domain/router-site.js';
import type { SiteState, SitesSummary } from '../domain/service-sites.js';
import {
  agentSite,
  carriesTag,
  certificateProgress,
  checkRouterLink,
  countTopology,
  defaultRouterSite,
  FULL_FORM_UP_TO,
  groupSites,
  hubNeighbourhood,
  NO_UPSTREAM,
  natsLinks,
  neighboursOf,
  type RouterLink,
  routerLinks,
  type ServicePlacement,
  type SiteFacts,
  type SiteGroups,
  SUMMARY_LISTED,
  type TopologyAgent,
  type TopologyCounts,
  type TopologyLink,
  type TopologyNatsHub,
  type TopologySite,
  unhealthySites,
  upstreamsOf,
} from '../domain/topology.js';
import { NotFoundError } from '../errors.js';
import { type AgentStatusRow, getAgentStatuses } from '../store/agent-reports.js';
import { type AgentRow, listAgentRows } from '../store/agents.js';
import { listAgentCertificates, listCertificateAuthorities } from '../store/certificates.js';
import { changeStateOf } from '../store/changes.js';
import { batchGetItems, keys } from '../store/client.js';
import { getNatsHub } from '../store/nats.js';
import { listPendingSites } from '../store/pending-sites.js';
import { getRequestRecords } from '../store/platform.js';
import { type DefaultRouterRow, getDefaultRouter, type RouterConfigRow } from '../store/routers.js';
import { listServiceRows, type ServiceRow } from '../store/services.js';
import { placementsOfService, summarizeSites } from './service-sites.js';

/**
 * The topology read model (GET /api/v3/topology): every fact is read once per request, in a handful
 * of queries and batched reads whatever the fleet's size; what is decided from them is in
 * shared/domain/topology.ts.
 */

export interface TopologyQuery {
  form?: 'full' | 'summary';
  service?: string;
  agent?: string;
  tag?: string;
  /** The sites in one state, dialling one router (`none`: no router), or whose name holds this. */
  state?: SiteState;
  upstream?: string;
  name?: string;
  after?: string;
  limit: number;
}

export interface TopologyService {
  name: string;
  type: ServiceRow['type'];
  bridgePort: number | null;
  status: ServiceRow['provisioningStatus'];
  /** The site holding its connector, and the one holding its hub listener (router keys). */
  connector: string | null;
  hub: string | null;
  sites: SitesSummary;
}

export type Topology =
  | {
      form: 'full';
      counts: TopologyCounts;
      sites: TopologySite[];
      links: TopologyLink[];
      natsHub: TopologyNatsHub | null;
      /** On the first page only. */
      services?: TopologyService[];
      /** With `?service=`: where that service is and each site's state of it. */
      placements?: ServicePlacement[];
      next?: string;
    }
  | {
      form: 'summary';
      counts: TopologyCounts;
      hub: { sites: TopologySite[]; links: RouterLink[]; more: number };
      unhealthy: { sites: TopologySite[]; more: number };
      /** The sites by state, by the router they dial and by tag: each group's filter lists exactly it. */
      groups: SiteGroups;
      services: { count: number; byStatus: Record<string, number>; notReady: TopologyService[] };
      natsHub: TopologyNatsHub | null;
      placements?: ServicePlacement[];
    };

/** What every form is computed from. */
interface Facts {
  defaultRouter: DefaultRouterRow | undefined;
  hubKey: string | undefined;
  agents: Map<string, TopologyAgent>;
  services: ServiceRow[];
  waitingSince: Map<string, string>;
  /** Agents whose router's first config is not written yet. */
  firstConfigPending: Set<string>;
  /** The agents' last reports read so far in this request (undefined: none stored). */
  statuses: Map<string, AgentStatusRow | undefined>;
  natsHub: TopologyNatsHub | null;
}

async function readFacts(): Promise<Facts> {
  const [defaultRouter, rows, markers, natsHub, services] = await Promise.all([
    getDefaultRouter(),
    listAgentRows(),
    listPendingSites(),
    getNatsHub(),
    listServiceRows(),
  ]);
  const waitingSince = new Map<string, string>();
  const firstConfigPending = new Set<string>();
  for (const marker of markers) {
    const earliest = waitingSince.get(marker.agentUuid);
    if (!earliest || marker.since < earliest) waitingSince.set(marker.agentUuid, marker.since);
    if (marker.firstConfig) firstConfigPending.add(marker.agentUuid);
  }
  return {
    defaultRouter,
    hubKey: hubRouterKey(defaultRouter),
    agents: new Map(rows.map((row) => [row.uuid, toTopologyAgent(row)])),
    services,
    waitingSince,
    firstConfigPending,
    statuses: new Map(),
    natsHub: natsHub
      ? { host: natsHub.host, leafPort: natsHub.leafPort, agentUuid: natsHub.agentUuid }
      : null,
  };
}

function toTopologyAgent(row: AgentRow): TopologyAgent {
  return {
    uuid: row.uuid,
    name: row.name,
    host: row.host,
    tags: row.tags,
    routerMode: row.routerMode,
    natsMode: row.natsMode,
    interRouterPort: row.interRouterPort,
    edgeRouterPort: row.edgeRouterPort,
    upstreamRouters: row.upstreamRouters,
    ...(row.upstreamNatsServers ? { upstreamNatsServers: row.upstreamNatsServers } : {}),
    ...(row.natsPorts ? { natsPorts: row.natsPorts } : {}),
  };
}

/** The agent a `?agent=` names, by uuid or by name. */
function namedAgent(facts: Facts, reference: string): TopologyAgent {
  const agent =
    facts.agents.get(reference) ??
    [...facts.agents.values()].find((candidate) => candidate.name === reference);
  if (!agent) throw new NotFoundError(`Agent ${JSON.stringify(reference)} not found (by uuid or name)`);
  return agent;
}

/** The sites in scope of the filters, the services in scope, and where the filtered service is. */
async function scopeOf(
  facts: Facts,
  query: TopologyQuery,
  links: readonly TopologyLink[],
): Promise<{ keys: Set<string>; services: ServiceRow[]; placements?: ServicePlacement[] }> {
  const prefix = config().serviceAnnotationTag;
  let keys = new Set([...facts.agents.keys(), ...(standalone(facts) ? [standalone(facts)!] : [])]);
  let services = facts.services;
  let placements: ServicePlacement[] | undefined;
  if (query.service !== undefined) {
    const row = facts.services.find((service) => service.name === query.service);
    if (!row) throw new NotFoundError(`Service ${JSON.stringify(query.service)} not found`);
    placements = await placementsOfService(row, facts.defaultRouter);
    const held = new Set(placements.map((placement) => placement.site));
    keys = new Set([...keys].filter((key) => held.has(key)));
    services = [row];
  }
  if (query.agent !== undefined) {
    const agent = namedAgent(facts, query.agent);
    const around = new Set([agent.uuid, ...neighboursOf(agent.uuid, links)]);
    keys = new Set([...keys].filter((key) => around.has(key)));
    const tokens = agentDistributionTokens(agent.tags, prefix);
    services = services.filter((row) => {
      const ends = [connectorRouterOf(row, facts.hubKey), serviceHubKey(row, facts.hubKey)];
      return ends.includes(agent.uuid) || agentSelectsService(tokens, row.tags);
    });
  }
  if (query.tag !== undefined) {
    const tag = query.tag;
    keys = new Set(
      [...keys].filter((key) => facts.agents.has(key) && carriesTag(facts.agents.get(key)!, tag, prefix)),
    );
    services = services.filter((row) => row.tags.includes(tag));
  }
  if (query.upstream !== undefined) {
    const upstream =
      query.upstream === NO_UPSTREAM || query.upstream === standalone(facts)
        ? query.upstream
        : namedAgent(facts, query.upstream).uuid;
    keys = new Set([...keys].filter((key) => upstreamsOf(key, links).includes(upstream)));
  }
  if (query.name !== undefined) {
    const wanted = query.name.toLowerCase();
    keys = new Set([...keys].filter((key) => siteName(facts, key).toLowerCase().includes(wanted)));
  }
  return { keys, services, ...(placements ? { placements } : {}) };
}

/** A site's name: its agent's, or the standalone default router's key. */
function siteName(facts: Facts, key: string): string {
  return facts.agents.get(key)?.name ?? key;
}

/** The standalone default router's key, when the default router is not an agent's. */
function standalone(facts: Facts): string | undefined {
  return facts.defaultRouter && facts.defaultRouter.agentUuid === null ? 'default-router' : undefined;
}

/**
 * The sites of `siteKeys`, described from the agents' last reports and pending markers; with their
 * change counters for those in `countersFor`.
 */
async function describeSites(
  facts: Facts,
  siteKeys: readonly string[],
  countersFor: ReadonlySet<string> = new Set(),
): Promise<Map<string, TopologySite>> {
  const agentKeys = siteKeys.filter((key) => facts.agents.has(key));
  // Each agent's last report is read once per request, however many times its site is described (a
  // `?state=` filter describes the scope before its form does).
  const unread = agentKeys.filter((key) => !facts.statuses.has(key));
  const [fresh, requests] = await Promise.all([
    getAgentStatuses(unread),
    getRequestRecords(agentKeys.filter((key) => countersFor.has(key))),
  ]);
  for (const key of unread) facts.statuses.set(key, fresh.get(key));
  const statuses = facts.statuses;
  const context = { hubKey: facts.hubKey, now: Date.now(), offlineAfterMs: config().agentOfflineAfterMs };
  const sites = new Map<string, TopologySite>();
  for (const key of siteKeys) {
    const agent = facts.agents.get(key);
    if (!agent) {
      if (key === standalone(facts)) sites.set(key, defaultRouterSite(facts.defaultRouter!));
      continue;
    }
    const siteFacts: SiteFacts = {};
    const lastActive = statuses.get(key)?.lastActive;
    if (lastActive !== undefined) siteFacts.lastActive = lastActive;
    const since = facts.waitingSince.get(key);
    if (since !== undefined) siteFacts.waitingSince = since;
    if (facts.firstConfigPending.has(key)) siteFacts.firstConfig = true;
    if (countersFor.has(key) && agent.routerMode !== 'none') {
      const changes = changeStateOf(requests.get(key));
      siteFacts.changes = {
        configVersion: changes.configChanged,
        acknowledgedVersion: changes.acknowledged,
        rebuildPending: changes.rebuildRouter,
      };
      const rollout = requests.get(key)?.rollout as SiteFacts['rollout'];
      if (rollout) siteFacts.rollout = rollout;
    }
    sites.set(key, agentSite(agent, siteFacts, context));
  }
  return sites;
}

/**
 * While a CA is rotated, each page site's certificates under it: which CA signed each, which its trust
 * file holds (one index query per site, only during a rotation).
 */
async function addCaRotationProgress(
  sites: Map<string, TopologySite>,
  page: readonly string[],
): Promise<void> {
  const rotating = new Map(
    (await listCertificateAuthorities()).filter((ca) => ca.rotation).map((ca) => [ca.name, ca]),
  );
  if (rotating.size === 0) return;
  for (const key of page) {
    const site = sites.get(key);
    if (site?.kind !== 'agent') continue;
    const progress = (await listAgentCertificates(key)).flatMap((leaf) => {
      const ca = rotating.get(leaf.signedBy);
      return ca ? [certificateProgress(leaf, { ...ca, previousCertPem: ca.rotation!.previousCertPem })] : [];
    });
    if (progress.length > 0) sites.set(key, { ...site, caRotation: progress });
  }
}

/** Checks each router link against both ends' stored configs and states. */
async function checkLinks(
  links: readonly RouterLink[],
  sites: ReadonlyMap<string, TopologySite>,
  facts: Facts,
): Promise<RouterLink[]> {
  const routerKeys = [...new Set(links.flatMap((link) => [link.from, link.to]))];
  const found = await batchGetItems<RouterConfigRow>(routerKeys.map((key) => keys.routerConfig(key)));
  // The own part of a stored config (its connectors and listeners) is what the link is read from.
  const configs = new Map(
    [...found].map(([index, row]) => [routerKeys[index]!, row.config as Partial<RouterSiteConfig>]),
  );
  return links.map((link) =>
    checkRouterLink(link, {
      dialerConfig: configs.get(link.from),
      upstreamConfig: configs.get(link.to),
      upstreamIsAgent: facts.agents.has(link.to),
      dialerState: sites.get(link.from)?.state ?? 'pending',
      upstreamState: sites.get(link.to)?.state ?? 'pending',
      names: { from: sites.get(link.from)?.name ?? link.from, to: sites.get(link.to)?.name ?? link.to },
    }),
  );
}

function toTopologyService(row: ServiceRow, facts: Facts, sites: SitesSummary): TopologyService {
  return {
    name: row.name,
    type: row.type,
    bridgePort: row.bridgePort,
    status: row.provisioningStatus,
    connector: connectorRouterOf(row, facts.hubKey) ?? null,
    hub: row.bridgePort === null ? null : (serviceHubKey(row, facts.hubKey) ?? null),
    sites,
  };
}

async function servicesOf(rows: readonly ServiceRow[], facts: Facts): Promise<TopologyService[]> {
  const summaries = await summarizeSites(rows);
  return rows.map((row) => toTopologyService(row, facts, summaries.get(row.name)!));
}

/** The network: sites, links and services, in the full form (paged) or the summary form. */
export async function readTopology(query: TopologyQuery): Promise<Topology> {
  const facts = await readFacts();
  const allLinks: TopologyLink[] = [
    ...routerLinks(facts.agents, facts.defaultRouter),
    ...natsLinks(facts.agents, facts.natsHub ?? undefined),
  ];
  const scope = await scopeOf(facts, query, allLinks);
  if (query.state !== undefined) {
    // A site's state is known once it is described: the scope keeps the sites in the state asked for.
    const described = await describeSites(facts, [...scope.keys]);
    scope.keys = new Set([...scope.keys].filter((key) => described.get(key)?.state === query.state));
  }
  // The links the sites in scope dial (their far ends are shown with them: a filtered view stays
  // connected to where it dials).
  const links = allLinks.filter((link) => scope.keys.has(link.from));
  const summary =
    query.form === 'summary' ||
    (query.form === undefined &&
      (scope.keys.size > FULL_FORM_UP_TO || scope.services.length > FULL_FORM_UP_TO));
  return summary ? summaryForm(facts, scope, links) : fullForm(facts, scope, links, query);
}

async function fullForm(
  facts: Facts,
  scope: Awaited<ReturnType<typeof scopeOf>>,
  scopeLinks: readonly TopologyLink[],
  query: TopologyQuery,
): Promise<Topology> {
  const ordered = [...scope.keys].sort();
  const start = query.after === undefined ? 0 : ordered.findIndex((key) => key > query.after!);
  const page = start < 0 ? [] : ordered.slice(start, start + query.limit);
  const onPage = new Set(page);
  // Each link once, on the page of the site that dials it.
  const links = scopeLinks.filter((link) => onPage.has(link.from));
  const ends = new Set([...page, ...links.flatMap((link) => [link.from, link.to])]);
  const described = await describeSites(facts, [...new Set([...ordered, ...ends])], ends);
  await addCaRotationProgress(described, page);
  const routerLinksOnPage = links.filter((link): link is RouterLink => link.kind === 'router');
  const checked = new Map(
    (await checkLinks(routerLinksOnPage, described, facts)).map((link) => [`${link.from}>${link.to}`, link]),
  );
  const last = page.at(-1);
  const more = start >= 0 && start + query.limit < ordered.length;
  return {
    form: 'full',
    counts: countTopology(
      [...described.values()].filter((site) => scope.keys.has(site.key)),
      scopeLinks,
    ),
    // The page's sites, and the far ends of its links that are outside the scope.
    sites: [...described.values()].filter(
      (site) => onPage.has(site.key) || (ends.has(site.key) && !scope.keys.has(site.key)),
    ),
    links: links.map((link) => (link.kind === 'router' ? checked.get(`${link.from}>${link.to}`)! : link)),
    natsHub: facts.natsHub,
    ...(query.after === undefined ? { services: await servicesOf(scope.services, facts) } : {}),
    ...(scope.placements ? { placements: scope.placements } : {}),
    ...(more && last ? { next: last } : {}),
  };
}

async function summaryForm(
  facts: Facts,
  scope: Awaited<ReturnType<typeof scopeOf>>,
  links: readonly TopologyLink[],
): Promise<Topology> {
  const described = await describeSites(facts, [...scope.keys]);
  const sites = [...described.values()];
  const around = hubNeighbourhood(
    sites,
    links.filter((link): link is RouterLink => link.kind === 'router'),
  );
  around.links = await checkLinks(around.links, described, facts);
  const unhealthy = unhealthySites(sites);
  const byStatus: Record<string, number> = {};
  for (const row of scope.services)
    byStatus[row.provisioningStatus] = (byStatus[row.provisioningStatus] ?? 0) + 1;
  const notReady = scope.services
    .filter((row) => row.provisioningStatus !== 'ready')
    .slice(0, SUMMARY_LISTED);
  return {
    form: 'summary',
    counts: countTopology(sites, links),
    hub: around,
    unhealthy: {
      sites: unhealthy.slice(0, SUMMARY_LISTED),
      more: Math.max(0, unhealthy.length - SUMMARY_LISTED),
    },
    groups: groupSites(
      sites,
      links,
      (key) => facts.agents.get(key)?.tags ?? [],
      config().serviceAnnotationTag,
    ),
    services: { count: scope.services.length, byStatus, notReady: await servicesOf(notReady, facts) },
    natsHub: facts.natsHub,
    ...(scope.placements ? { placements: scope.placements } : {}),
  };
}
