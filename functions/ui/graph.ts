import type { z } from 'zod';
import type { topologyView } from '../../shared/http/api-schemas.js';

/**
 * What the network page draws, from the topology the API answers: pure, so the mapping is tested on
 * its own (test/unit/ui-graph.test.ts) and the page only hands the result to the graph library.
 */

/**
 * What GET /api/v3/topology answers, typed from the route's own response schema (the one its OpenAPI
 * document is built from). Types only: nothing of the schema is bundled into the page.
 */
export type Topology = z.infer<typeof topologyView>;
type FullTopology = Extract<Topology, { form: 'full' }>;
export type Site = FullTopology['sites'][number];
export type Link = FullTopology['links'][number];
export type Service = NonNullable<FullTopology['services']>[number];
export type Placement = NonNullable<FullTopology['placements']>[number];
export type SiteState = Site['state'];
type SummaryTopology = Extract<Topology, { form: 'summary' }>;
export type Grouping = keyof SummaryTopology['groups'];
export type SiteGroup = SummaryTopology['groups'][Grouping]['groups'][number];

/** The colours a site is drawn in, by state (the legend shows the same). */
export const STATE_COLOURS: Record<SiteState | 'uninvolved' | 'group', string> = {
  applied: '#2e7d32',
  pending: '#f9a825',
  offline: '#9e9e9e',
  new: '#1565c0',
  uninvolved: '#e0e0e0',
  group: '#90caf9',
};

export interface NodeData {
  id: string;
  label: string;
  kind: 'site' | 'nats-hub' | 'group';
  routerMode: string;
  hub: boolean;
  /**
   * The colour's reason: the site's own state, or (a service selected) its state of that service; a
   * group of one state is that state's colour, any other group `group`.
   */
  shade: SiteState | 'uninvolved' | 'group';
  /** What the selected service has on the site: `hub`, `connector`, `listener`. */
  roles: string[];
  /** An agent not heard from within the offline threshold. */
  silent: boolean;
  /** A group's sites, and how many of them are not healthy. */
  count?: number;
  unhealthy?: number;
}

export interface EdgeData {
  id: string;
  source: string;
  target: string;
  kind: Link['kind'];
  /** A router link whose ends do not both hold it. */
  notHeld: boolean;
  label: string;
}

/** The sites and links a topology answer carries, whichever its form. */
export function sitesAndLinks(topology: Topology): { sites: Site[]; links: Link[] } {
  if (topology.form === 'full') return { sites: topology.sites, links: topology.links };
  const sites = new Map<string, Site>();
  for (const site of [...topology.hub.sites, ...topology.unhealthy.sites]) sites.set(site.key, site);
  return { sites: [...sites.values()], links: topology.hub.links };
}

/**
 * The sites with what a later answer says of them: the service's placements are read after the
 * topology, and an agent may fall silent in between; its site as that answer describes it goes with
 * the placement read beside it, so a site shaded offline is also drawn silent.
 */
export function withNewerSites(sites: readonly Site[], newer: readonly Site[]): Site[] {
  const byKey = new Map(newer.map((site) => [site.key, site]));
  return sites.map((site) => byKey.get(site.key) ?? site);
}

/**
 * The graph's nodes and edges: one node per site, one for a NATS hub that is not an agent when a leaf
 * links to it, one edge per link whose ends are both drawn. With `placements` (a service selected),
 * each site is shaded by its state of that service and the others are drawn as uninvolved.
 */
export function graphOf(
  sites: readonly Site[],
  links: readonly Link[],
  placements?: readonly Placement[],
): { nodes: NodeData[]; edges: EdgeData[] } {
  const placed = new Map((placements ?? []).map((placement) => [placement.site, placement]));
  const nodes: NodeData[] = sites.map((site) => {
    const placement = placed.get(site.key);
    return {
      id: site.key,
      label: site.name,
      kind: 'site',
      routerMode: site.routerMode,
      hub: site.hub,
      shade: placements ? (placement?.state ?? 'uninvolved') : site.state,
      roles: placement?.roles ?? [],
      silent: site.online === false,
    };
  });
  const drawn = new Set(nodes.map((node) => node.id));
  if (links.some((link) => link.to === 'default-nats-hub') && !drawn.has('default-nats-hub')) {
    nodes.push({
      id: 'default-nats-hub',
      label: 'NATS hub',
      kind: 'nats-hub',
      routerMode: 'none',
      hub: false,
      shade: placements ? 'uninvolved' : 'applied',
      roles: [],
      silent: false,
    });
    drawn.add('default-nats-hub');
  }
  const edges = links
    .filter((link) => drawn.has(link.from) && drawn.has(link.to))
    .map((link) => ({
      id: `${link.kind}:${link.from}>${link.to}`,
      source: link.from,
      target: link.to,
      kind: link.kind,
      notHeld: link.kind === 'router' && link.held === false,
      label: `${link.kind === 'router' ? link.role : link.kind} ${link.port}`,
    }));
  return { nodes, edges };
}

/** The graph node id of a group (`group:<grouping>:<value>`). */
export function groupNodeId(grouping: Grouping, value: string): string {
  return `group:${grouping}:${value}`;
}

/** How a group reads, on its node and on its button: what it is, its count, the unhealthy among them. */
export function groupText(group: SiteGroup): string {
  const sites = `${group.count} ${group.count === 1 ? 'site' : 'sites'}`;
  return `${group.label}: ${sites}${group.unhealthy > 0 ? `, ${group.unhealthy} not healthy` : ''}`;
}

/**
 * The overview of a large fleet (the summary form): the hub, every site the summary lists as not
 * healthy, and one node per group of the chosen grouping, labelled with its count; the router links
 * between the sites drawn, and from each group of sites dialling a drawn router to that router.
 */
export function overviewOf(
  summary: SummaryTopology,
  grouping: Grouping,
  placements?: readonly Placement[],
): { nodes: NodeData[]; edges: EdgeData[] } {
  const hub = summary.hub.sites.filter((site) => site.hub);
  const sites = new Map([...hub, ...summary.unhealthy.sites].map((site) => [site.key, site]));
  const drawn = graphOf([...sites.values()], summary.hub.links, placements);
  const ids = new Set(drawn.nodes.map((node) => node.id));
  const groups = summary.groups[grouping].groups;
  const nodes: NodeData[] = [
    ...drawn.nodes,
    ...groups.map((group) => ({
      id: groupNodeId(grouping, group.value),
      label: `${group.label}\n${group.count} ${group.count === 1 ? 'site' : 'sites'}`,
      kind: 'group' as const,
      routerMode: 'none',
      hub: false,
      shade: grouping === 'state' ? (group.value as SiteState) : ('group' as const),
      roles: [],
      silent: false,
      count: group.count,
      unhealthy: group.unhealthy,
    })),
  ];
  const edges = [
    ...drawn.edges,
    ...(grouping === 'upstream'
      ? groups
          .filter((group) => ids.has(group.value))
          .map((group) => ({
            id: `group:${group.value}`,
            source: groupNodeId(grouping, group.value),
            target: group.value,
            kind: 'router' as const,
            notHeld: false,
            label: '',
          }))
      : []),
  ];
  return { nodes, edges };
}

/**
 * What the page draws against what the API answered: sites the API has that are not drawn, and drawn
 * sites the API does not have. Both empty when the page shows exactly the API's sites.
 */
export function compareDrawnSites(
  apiSites: readonly Pick<Site, 'key'>[],
  drawnSiteIds: readonly string[],
): { missing: string[]; unknown: string[] } {
  const api = new Set(apiSites.map((site) => site.key));
  const drawn = new Set(drawnSiteIds);
  return {
    missing: [...api].filter((key) => !drawn.has(key)).sort(),
    unknown: [...drawn].filter((key) => !api.has(key)).sort(),
  };
}

export interface SiteRow {
  key: string;
  name: string;
  mode: string;
  state: SiteState;
  heard: string;
  config: string;
}

/** The sites table: hub first, then by name; `filter` matches any cell, case-insensitively. */
export function siteRows(sites: readonly Site[], filter = '', now = Date.now()): SiteRow[] {
  const rows = [...sites]
    .sort((a, b) => Number(b.hub) - Number(a.hub) || a.name.localeCompare(b.name))
    .map((site) => ({
      key: site.key,
      name: site.name,
      mode: `${site.routerMode}${site.hub ? ' (hub)' : ''}${site.natsMode && site.natsMode !== 'none' ? ` / NATS ${site.natsMode}` : ''}`,
      state: site.state,
      heard: heardText(site, now),
      config:
        site.configVersion === undefined || site.configVersion === null
          ? '—'
          : `${site.acknowledgedVersion ?? 0} of ${site.configVersion}${site.rebuildPending ? ', rebuild pending' : ''}`,
    }));
  return rows.filter((row) => matches(filter, Object.values(row)));
}

function heardText(site: Site, now: number): string {
  if (site.online === null) return 'not polled';
  if (!site.lastSeen) return 'never';
  const seconds = Math.max(0, Math.round((now - Date.parse(site.lastSeen)) / 1000));
  return `${site.online ? 'online' : 'silent'}, ${seconds} s ago`;
}

export interface ServiceRow {
  name: string;
  type: string;
  port: string;
  status: string;
  connector: string;
  sites: string;
}

/** The services table, by name; connector routers by name where the page knows them. */
export function serviceRows(services: readonly Service[], sites: readonly Site[], filter = ''): ServiceRow[] {
  const names = new Map(sites.map((site) => [site.key, site.name]));
  return [...services]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((service) => ({
      name: service.name,
      type: service.type,
      port: service.bridgePort === null ? '—' : String(service.bridgePort),
      status: service.status,
      connector: service.connector ? (names.get(service.connector) ?? service.connector) : '—',
      sites: `${service.sites.applied} of ${service.sites.expected} applied${service.sites.pending ? `, ${service.sites.pending} pending` : ''}${service.sites.offline ? `, ${service.sites.offline} offline` : ''}`,
    }))
    .filter((row) => matches(filter, Object.values(row)));
}

function matches(filter: string, cells: readonly string[]): boolean {
  const wanted = filter.trim().toLowerCase();
  return wanted === '' || cells.some((cell) => cell.toLowerCase().includes(wanted));
}
