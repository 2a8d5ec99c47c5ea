import type { NatsMode } from './agent-schema.js';
import { natsPortsOf } from './nats-conf.js';
import { DEFAULT_NATS_HUB, DEFAULT_ROUTER } from './placement.js';
import type { RouterMode } from './router-objects.js';
import { type RouterSiteConfig, upstreamRouters } from './router-site.js';
import { isOnline, type SiteRole, type SiteState, siteState } from './service-sites.js';

/**
 * The network as an operator looks at it: sites (every agent's router and the standalone default
 * router), the links between them (router links from each agent to its upstreams; NATS leaf and
 * cluster links), and the services riding on them. Pure decisions; shared/commands/topology.ts reads
 * the facts they decide on.
 */

/** Above this many sites (or services), the topology answers in its summary form unless asked. */
export const FULL_FORM_UP_TO = 200;
/** Sites a page of the full form holds by default, and at most. */
export const PAGE_LIMIT = { default: 200, max: 1000 } as const;
/** Sites the summary lists by name: around the hub, and those not healthy. */
export const SUMMARY_LISTED = 100;

export type SiteKind = 'agent' | 'default-router';

export interface TopologySite {
  /** The router key: the agent's uuid, or `default-router` for the standalone default router. */
  key: string;
  kind: SiteKind;
  name: string;
  host: string | null;
  routerMode: RouterMode;
  natsMode: NatsMode | null;
  /** Its router is the hub (the default router). */
  hub: boolean;
  /**
   * Whether the agent was heard from within the offline threshold (null: not an agent, nobody polls).
   */
  online: boolean | null;
  lastSeen: string | null;
  /**
   * `applied`: its router holds everything it should; `pending`: something is not applied yet and the
   * agent is heard from; `offline`: not applied, and the agent is not heard from.
   */
  state: SiteState;
  /** Since when something waits to be applied (ISO time); null when nothing does. */
  since: string | null;
  /** Change counter values of its router config: the last written and the one acknowledged. */
  configVersion?: number | null;
  acknowledgedVersion?: number | null;
  rebuildPending?: boolean;
  /**
   * What its router's rebuild waits for (an agent it dials that is not ready for the new dial), or,
   * with `toldAt`, waited for until the bounded wait ran out and it was told anyway.
   */
  rollout?: RolloutWait;
  /** While a CA it holds a certificate of is rotated: which CA signs each such certificate, which it trusts. */
  caRotation?: CertificateProgress[];
}

/** Where one certificate of a site stands in its CA's rotation. */
export interface CertificateProgress {
  certificate: string;
  ca: string;
  /** The CA key that signed it: the rotation's new one, or the one it replaces. */
  signedBy: 'new' | 'old';
  /** The CAs its trust file (`ca.crt`) holds. */
  trusts: ('new' | 'old')[];
}

/** A certificate's progress in its CA's rotation, from its signer and its trust file. */
export function certificateProgress(
  leaf: { name: string; signerFingerprint: string; caPem: string },
  ca: { name: string; fingerprint: string; certPem: string; previousCertPem: string },
): CertificateProgress {
  const holds = (pem: string) => leaf.caPem.includes(pem.trim());
  return {
    certificate: leaf.name,
    ca: ca.name,
    signedBy: leaf.signerFingerprint === ca.fingerprint ? 'new' : 'old',
    trusts: [
      ...(holds(ca.certPem) ? (['new'] as const) : []),
      ...(holds(ca.previousCertPem) ? (['old'] as const) : []),
    ],
  };
}

/** A dialling router's held rebuild: the agent it dials, why it is not ready, since when; `toldAt`. */
export interface RolloutWait {
  upstream: string;
  upstreamName: string;
  reason: string;
  since: string;
  toldAt?: string;
}

export interface RouterLink {
  kind: 'router';
  /** The site that dials. */
  from: string;
  /** The site it dials (a router key). */
  to: string;
  role: 'edge' | 'inter-router';
  host: string;
  port: number;
  /**
   * Both ends hold the link and run it: the dialer's stored config has the connector, the upstream's
   * has the listener, and both sites applied their configs. Null where the ends were not read (summary).
   */
  held: boolean | null;
  /** Why a link is not held. */
  reason?: string;
}

export interface NatsLink {
  /** A leaf's remote to a server, or a route between two NATS servers (listed once per pair). */
  kind: 'nats-leaf' | 'nats-route';
  from: string;
  /** An agent uuid, or `default-nats-hub` for a hub that is not an agent (the operator's). */
  to: string;
  host: string;
  port: number;
}

export type TopologyLink = RouterLink | NatsLink;

/** What a site description is built from. */
export interface TopologyAgent {
  uuid: string;
  name: string;
  host: string | null;
  tags: readonly string[];
  routerMode: RouterMode;
  natsMode: NatsMode;
  interRouterPort: number | null;
  edgeRouterPort: number | null;
  upstreamRouters: readonly string[];
  upstreamNatsServers?: readonly string[];
  natsPorts?: { clusterPort: number; leafPort: number };
}

export interface TopologyDefaultRouter {
  host: string;
  interRouterPort: number;
  edgeRouterPort: number;
  agentUuid: string | null;
}

export interface TopologyNatsHub {
  host: string;
  leafPort: number;
  agentUuid: string | null;
}

/** What is known of an agent besides its row: its last report, its pending markers, its counters. */
export interface SiteFacts {
  lastActive?: number;
  /** The earliest pending-site marker of the agent (ISO time), if any. */
  waitingSince?: string;
  /** Its router's first config is not written yet (its marker says so). */
  firstConfig?: boolean;
  changes?: { configVersion: number; acknowledgedVersion: number; rebuildPending: boolean };
  rollout?: RolloutWait;
}

/** An agent's site. */
export function agentSite(
  agent: TopologyAgent,
  facts: SiteFacts,
  context: { hubKey: string | undefined; now: number; offlineAfterMs: number },
): TopologySite {
  const { state, since, lastSeen } = siteState(
    {
      ...(facts.waitingSince === undefined ? {} : { waitingSince: facts.waitingSince }),
      ...(facts.firstConfig ? { firstConfig: true } : {}),
      ...(facts.changes
        ? {
            rebuildPending: facts.changes.rebuildPending,
            configVersion: facts.changes.configVersion,
            acknowledgedVersion: facts.changes.acknowledgedVersion,
          }
        : {}),
      ...(facts.lastActive === undefined ? {} : { lastActive: facts.lastActive }),
    },
    context.now,
    context.offlineAfterMs,
  );
  return {
    key: agent.uuid,
    kind: 'agent',
    name: agent.name,
    host: agent.host,
    routerMode: agent.routerMode,
    natsMode: agent.natsMode,
    hub: agent.uuid === context.hubKey,
    online: isOnline(facts.lastActive, context.now, context.offlineAfterMs),
    lastSeen,
    state,
    since,
    ...(facts.changes ?? {}),
    ...(facts.rollout ? { rollout: facts.rollout } : {}),
  };
}

/** The standalone default router's site: run by the operator, not by an agent (nothing polls). */
export function defaultRouterSite(router: TopologyDefaultRouter): TopologySite {
  return {
    key: DEFAULT_ROUTER,
    kind: 'default-router',
    name: DEFAULT_ROUTER,
    host: router.host,
    routerMode: 'interior',
    natsMode: null,
    hub: true,
    online: null,
    lastSeen: null,
    state: 'applied',
    since: null,
  };
}

/**
 * The router links agents dial, as their configs are computed: each upstream of an agent with a router,
 * `default-router` resolved to the hub, an agent upstream only when it is interior and has a host.
 */
export function routerLinks(
  agents: ReadonlyMap<string, TopologyAgent>,
  defaultRouter: TopologyDefaultRouter | undefined,
  dialers: Iterable<TopologyAgent> = agents.values(),
): RouterLink[] {
  const links: RouterLink[] = [];
  for (const agent of dialers) {
    if (agent.routerMode === 'none') continue;
    const role = agent.routerMode === 'edge' ? 'edge' : 'inter-router';
    for (const upstream of upstreamRouters(agent, defaultRouter, (uuid) => agents.get(uuid))) {
      links.push({
        kind: 'router',
        from: agent.uuid,
        to: upstream.key,
        role,
        host: upstream.host,
        port: role === 'edge' ? upstream.edgeRouterPort : upstream.interRouterPort,
        held: null,
      });
    }
  }
  return links;
}

/**
 * Whether both ends hold a router link: the dialer's stored own part connects to the upstream at its
 * host and port, the upstream's (when it is an agent) listens there with the link's role, and neither
 * end waits to apply its config. `upstreamConfig` undefined with `upstreamIsAgent` false: the
 * standalone default router, whose listeners the operator runs.
 */
export function checkRouterLink(
  link: RouterLink,
  ends: {
    dialerConfig: Partial<RouterSiteConfig> | undefined;
    upstreamConfig: Partial<RouterSiteConfig> | undefined;
    upstreamIsAgent: boolean;
    dialerState: SiteState;
    upstreamState: SiteState;
    names: { from: string; to: string };
  },
): RouterLink {
  const connector = ends.dialerConfig?.connectors?.[link.to];
  if (
    !connector ||
    connector.host !== link.host ||
    Number(connector.port) !== link.port ||
    connector.role !== link.role
  ) {
    return {
      ...link,
      held: false,
      reason: `${ends.names.from}'s router config has no ${link.role} connector to ${link.host}:${link.port}`,
    };
  }
  if (ends.upstreamIsAgent) {
    const listening = Object.values(ends.upstreamConfig?.listeners ?? {}).some(
      (listener) => listener.role === link.role && listener.port === link.port,
    );
    if (!listening) {
      return {
        ...link,
        held: false,
        reason: `${ends.names.to}'s router config has no ${link.role} listener on port ${link.port}`,
      };
    }
  }
  for (const [end, state, name] of [
    ['dialer', ends.dialerState, ends.names.from],
    ['upstream', ends.upstreamState, ends.names.to],
  ] as const) {
    if (state !== 'applied') {
      return {
        ...link,
        held: false,
        reason: `${name} (${end}) has not applied its router config (${state})`,
      };
    }
  }
  return { ...link, held: true };
}

/**
 * The NATS links: every leaf's remotes (its upstream servers, the hub by default) and one route for
 * each pair of agent NATS servers with a host (every server routes to every other).
 */
export function natsLinks(
  agents: ReadonlyMap<string, TopologyAgent>,
  natsHub: TopologyNatsHub | undefined,
): NatsLink[] {
  const links: NatsLink[] = [];
  const servers = [...agents.values()]
    .filter((agent) => agent.natsMode === 'server' && agent.host)
    .sort((a, b) => (a.uuid < b.uuid ? -1 : 1));
  for (const agent of agents.values()) {
    if (agent.natsMode !== 'leaf') continue;
    for (const reference of agent.upstreamNatsServers ?? [DEFAULT_NATS_HUB]) {
      if (reference === DEFAULT_NATS_HUB) {
        if (!natsHub?.host || natsHub.agentUuid === agent.uuid) continue;
        const to = natsHub.agentUuid ?? DEFAULT_NATS_HUB;
        links.push({ kind: 'nats-leaf', from: agent.uuid, to, host: natsHub.host, port: natsHub.leafPort });
        continue;
      }
      const server = agents.get(reference);
      if (!server?.host || server.natsMode !== 'server') continue;
      const port = natsPortsOf(server).leafPort;
      links.push({ kind: 'nats-leaf', from: agent.uuid, to: server.uuid, host: server.host, port });
    }
  }
  for (const [index, a] of servers.entries()) {
    for (const b of servers.slice(index + 1)) {
      const port = natsPortsOf(b).clusterPort;
      links.push({ kind: 'nats-route', from: a.uuid, to: b.uuid, host: b.host!, port });
    }
  }
  return links;
}

/** How the summary groups sites: by their state, by the router they dial, by the tags they carry. */
export const GROUPINGS = ['state', 'upstream', 'tag'] as const;
export type Grouping = (typeof GROUPINGS)[number];
/** Groups listed per grouping at most (the largest first); the rest are counted in `more`. */
export const GROUPS_LISTED = 50;
/** The `?upstream=` of the sites that dial no router. */
export const NO_UPSTREAM = 'none';

/**
 * A group of sites: what its members share (`value`, the filter that lists exactly them), how it reads,
 * how many sites it holds and how many of them are not healthy.
 */
export interface SiteGroup {
  value: string;
  label: string;
  count: number;
  unhealthy: number;
}

export type SiteGroups = Record<Grouping, { groups: SiteGroup[]; more: number }>;

/** Not applied, or not heard from: what the summary lists and the page always draws. */
export function isUnhealthy(site: Pick<TopologySite, 'state' | 'online'>): boolean {
  return site.state !== 'applied' || site.online === false;
}

/** A tag as the filters take it: a distribution tag's token, any other tag as carried. */
export function tagValue(tag: string, prefix: string): string {
  return tag.startsWith(`${prefix}: `) ? tag.slice(prefix.length + 2) : tag;
}

/** The router keys a site dials (its router links' far ends), or `NO_UPSTREAM`. */
export function upstreamsOf(key: string, links: readonly TopologyLink[]): string[] {
  const upstreams = links
    .filter((link) => link.kind === 'router' && link.from === key)
    .map((link) => link.to);
  return upstreams.length > 0 ? [...new Set(upstreams)] : [NO_UPSTREAM];
}

/**
 * The sites grouped three ways. A site dialling two routers is in both their groups, one carrying two
 * tags in both tags' groups; an untagged site is in no tag group. Each grouping lists its largest
 * `GROUPS_LISTED` groups (ties by label).
 */
export function groupSites(
  sites: readonly TopologySite[],
  links: readonly TopologyLink[],
  tagsOf: (key: string) => readonly string[],
  prefix: string,
): SiteGroups {
  const names = new Map(sites.map((site) => [site.key, site.name]));
  const tallies: Record<Grouping, Map<string, SiteGroup>> = {
    state: new Map(),
    upstream: new Map(),
    tag: new Map(),
  };
  const count = (grouping: Grouping, value: string, label: string, site: TopologySite) => {
    const group = tallies[grouping].get(value) ?? { value, label, count: 0, unhealthy: 0 };
    group.count += 1;
    if (isUnhealthy(site)) group.unhealthy += 1;
    tallies[grouping].set(value, group);
  };
  for (const site of sites) {
    count('state', site.state, site.state, site);
    for (const upstream of upstreamsOf(site.key, links))
      count(
        'upstream',
        upstream,
        upstream === NO_UPSTREAM ? 'no upstream router' : `via ${names.get(upstream) ?? upstream}`,
        site,
      );
    for (const tag of new Set(tagsOf(site.key).map((carried) => tagValue(carried, prefix))))
      count('tag', tag, `tag ${tag}`, site);
  }
  const listed = (grouping: Grouping) => {
    const all = [...tallies[grouping].values()].sort(
      (a, b) => b.count - a.count || a.label.localeCompare(b.label),
    );
    return { groups: all.slice(0, GROUPS_LISTED), more: Math.max(0, all.length - GROUPS_LISTED) };
  };
  return { state: listed('state'), upstream: listed('upstream'), tag: listed('tag') };
}

/**
 * Whether an agent carries `tag`: the tag itself, or the token of a distribution tag
 * (`<prefix>: <token>`), so `?tag=checkout` finds the agents listening for services tagged checkout.
 */
export function carriesTag(agent: Pick<TopologyAgent, 'tags'>, tag: string, prefix: string): boolean {
  return agent.tags.some((carried) => carried === tag || carried === `${prefix}: ${tag}`);
}

/** The sites a site links with, either way: its upstreams and the sites dialing it. */
export function neighboursOf(key: string, links: readonly TopologyLink[]): Set<string> {
  const neighbours = new Set<string>();
  for (const link of links) {
    if (link.from === key) neighbours.add(link.to);
    if (link.to === key) neighbours.add(link.from);
  }
  return neighbours;
}

/** A site's state and what it holds of one service (the `?service=` view colours sites by it). */
export interface ServicePlacement {
  site: string;
  roles: SiteRole[];
  state: SiteState;
}

export interface TopologyCounts {
  sites: number;
  byRouterMode: Record<RouterMode, number>;
  byState: Record<SiteState, number>;
  /** Agents heard from within the offline threshold, and not. */
  online: number;
  silent: number;
  routerLinks: number;
  natsLinks: number;
}

/** Counts of sites and links, for the summary form. */
export function countTopology(
  sites: readonly TopologySite[],
  links: readonly TopologyLink[],
): TopologyCounts {
  const counts: TopologyCounts = {
    sites: sites.length,
    byRouterMode: { interior: 0, edge: 0, none: 0 },
    byState: { applied: 0, pending: 0, offline: 0, new: 0 },
    online: 0,
    silent: 0,
    routerLinks: 0,
    natsLinks: 0,
  };
  for (const site of sites) {
    counts.byRouterMode[site.routerMode] += 1;
    counts.byState[site.state] += 1;
    if (site.online === true) counts.online += 1;
    if (site.online === false) counts.silent += 1;
  }
  for (const link of links) {
    if (link.kind === 'router') counts.routerLinks += 1;
    else counts.natsLinks += 1;
  }
  return counts;
}

/** Sites that are not healthy, the longest waiting first: not applied, or silent. */
export function unhealthySites(sites: readonly TopologySite[]): TopologySite[] {
  return sites
    .filter(isUnhealthy)
    .sort(
      (a, b) =>
        (a.since ?? '\uffff').localeCompare(b.since ?? '\uffff') ||
        (a.lastSeen ?? '').localeCompare(b.lastSeen ?? '') ||
        a.name.localeCompare(b.name),
    );
}

/**
 * The hub's neighbourhood: the hub and the sites linked to it by a router link (the first
 * `SUMMARY_LISTED` by name), with the links between them.
 */
export function hubNeighbourhood(
  sites: readonly TopologySite[],
  links: readonly RouterLink[],
): { sites: TopologySite[]; links: RouterLink[]; more: number } {
  const hub = sites.find((site) => site.hub);
  if (!hub) return { sites: [], links: [], more: 0 };
  const neighbours = neighboursOf(hub.key, links);
  const around = sites
    .filter((site) => neighbours.has(site.key))
    .sort((a, b) => a.name.localeCompare(b.name));
  const listed = new Set([hub.key, ...around.slice(0, SUMMARY_LISTED).map((site) => site.key)]);
  return {
    sites: sites.filter((site) => listed.has(site.key)),
    links: links.filter((link) => listed.has(link.from) && listed.has(link.to)),
    more: Math.max(0, around.length - SUMMARY_LISTED),
  };
}
