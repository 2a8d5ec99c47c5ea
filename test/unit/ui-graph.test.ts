import { describe, expect, it } from 'vitest';
import {
  compareDrawnSites,
  graphOf,
  groupText,
  type Link,
  overviewOf,
  type Placement,
  type Site,
  serviceRows,
  siteRows,
  sitesAndLinks,
  type Topology,
  withNewerSites,
} from '../../functions/ui/graph.js';
import { topologySite } from '../fixtures/topology-sites.js';

const site: (key: string, overrides?: Partial<Site>) => Site = topologySite;
const HUB = site('hub-uuid', { name: 'hub', hub: true, routerMode: 'interior', natsMode: 'server' });
const FOG_A = site('fog-a-uuid', { name: 'fog-a' });
const EDGE = site('edge-uuid', { name: 'edge-01', state: 'pending', since: '2026-12-04T11:00:00Z' });
const LINKS: Link[] = [
  { kind: 'router', from: 'fog-a-uuid', to: 'hub-uuid', role: 'edge', host: 'hub', port: 45671, held: true },
  { kind: 'router', from: 'edge-uuid', to: 'hub-uuid', role: 'edge', host: 'hub', port: 45671, held: false },
  { kind: 'nats-leaf', from: 'edge-uuid', to: 'default-nats-hub', host: 'nats', port: 7422 },
];

/** The counts of a 5,000-site fleet with one pending site, as the summary form gives them. */
const SUMMARY_COUNTS = {
  sites: 5000,
  byRouterMode: { interior: 1, edge: 4999, none: 0 },
  byState: { applied: 4999, pending: 1, offline: 0, new: 0 },
  online: 5000,
  silent: 0,
  routerLinks: 4999,
  natsLinks: 0,
};

describe('the page draws what the API answers', () => {
  it('draws one node per site and one edge per link, shading each site by its state', () => {
    // Act
    const { nodes, edges } = graphOf([HUB, FOG_A, EDGE], LINKS);

    // Assess
    expect(nodes.map((node) => [node.id, node.kind, node.shade])).toEqual([
      ['hub-uuid', 'site', 'applied'],
      ['fog-a-uuid', 'site', 'applied'],
      ['edge-uuid', 'site', 'pending'],
      ['default-nats-hub', 'nats-hub', 'applied'],
    ]);
    expect(edges.map((edge) => [edge.id, edge.notHeld])).toEqual([
      ['router:fog-a-uuid>hub-uuid', false],
      ['router:edge-uuid>hub-uuid', true],
      ['nats-leaf:edge-uuid>default-nats-hub', false],
    ]);
  });

  it('shades sites by their state of the selected service and the others as uninvolved', () => {
    // Act
    const { nodes } = graphOf([HUB, FOG_A, EDGE], LINKS, [
      { site: 'hub-uuid', roles: ['hub'], state: 'applied' },
      { site: 'fog-a-uuid', roles: ['connector'], state: 'pending' },
    ]);

    // Assess
    expect(
      nodes.filter((node) => node.kind === 'site').map((node) => [node.id, node.shade, node.roles]),
    ).toEqual([
      ['hub-uuid', 'applied', ['hub']],
      ['fog-a-uuid', 'pending', ['connector']],
      ['edge-uuid', 'uninvolved', []],
    ]);
  });

  it('draws a site with the facts read beside the service placements, so one shaded offline is drawn silent', () => {
    // Prepare: the topology read while edge-01 was heard from, the service read after it fell silent
    const silentEdge = site('edge-uuid', { name: 'edge-01', online: false, state: 'offline' });
    const placements: Placement[] = [{ site: 'edge-uuid', roles: ['listener'], state: 'offline' }];

    // Act
    const { nodes } = graphOf(withNewerSites([HUB, FOG_A, EDGE], [silentEdge]), LINKS, placements);

    // Assess
    expect(
      nodes.filter((node) => node.kind === 'site').map((node) => [node.id, node.shade, node.silent]),
    ).toEqual([
      ['hub-uuid', 'uninvolved', false],
      ['fog-a-uuid', 'uninvolved', false],
      ['edge-uuid', 'offline', true],
    ]);
  });

  it('draws no edge whose end is not drawn', () => {
    // Act
    const { edges } = graphOf([FOG_A], LINKS);

    // Assess
    expect(edges).toEqual([]);
  });

  it('takes the hub neighbourhood and the unhealthy sites from the summary form, each once', () => {
    // Prepare
    const heldNot = LINKS[1] as Extract<Link, { kind: 'router' }>;
    const summary: Topology = {
      form: 'summary',
      counts: SUMMARY_COUNTS,
      hub: { sites: [HUB, EDGE], links: [heldNot], more: 4000 },
      unhealthy: { sites: [EDGE], more: 0 },
      groups: SUMMARY_GROUPS,
      services: { count: 0, byStatus: {}, notReady: [] },
      natsHub: null,
    };

    // Act
    const { sites, links } = sitesAndLinks(summary);

    // Assess
    expect(sites.map((each) => each.key)).toEqual(['hub-uuid', 'edge-uuid']);
    expect(links).toEqual([heldNot]);
  });
});

const SUMMARY_GROUPS = {
  state: {
    groups: [
      { value: 'applied', label: 'applied', count: 4999, unhealthy: 0 },
      { value: 'pending', label: 'pending', count: 1, unhealthy: 1 },
    ],
    more: 0,
  },
  upstream: {
    groups: [
      { value: 'hub-uuid', label: 'via hub', count: 4999, unhealthy: 1 },
      { value: 'none', label: 'no upstream router', count: 1, unhealthy: 0 },
    ],
    more: 0,
  },
  tag: { groups: [{ value: 'checkout', label: 'tag checkout', count: 3300, unhealthy: 1 }], more: 2 },
};

describe('the overview of a large fleet', () => {
  const summary: Extract<Topology, { form: 'summary' }> = {
    form: 'summary',
    counts: SUMMARY_COUNTS,
    hub: { sites: [HUB, FOG_A, EDGE], links: [LINKS[0]!, LINKS[1]!] as never, more: 4000 },
    unhealthy: { sites: [EDGE], more: 0 },
    groups: SUMMARY_GROUPS,
    services: { count: 0, byStatus: {}, notReady: [] },
    natsHub: null,
  };

  it.each([
    ['state', ['group:state:applied', 'group:state:pending'], ['applied', 'pending']],
    ['upstream', ['group:upstream:hub-uuid', 'group:upstream:none'], ['group', 'group']],
    ['tag', ['group:tag:checkout'], ['group']],
  ] as const)(
    'grouped by %s: the hub, the unhealthy sites, one node per group with its count',
    (grouping, ids, shades) => {
      // Act
      const { nodes } = overviewOf(summary, grouping);

      // Assess: fog-a (healthy, not the hub) is in its groups only
      expect(nodes.filter((node) => node.kind === 'site').map((node) => node.id)).toEqual([
        'hub-uuid',
        'edge-uuid',
      ]);
      const groups = nodes.filter((node) => node.kind === 'group');
      expect(groups.map((node) => node.id)).toEqual(ids);
      expect(groups.map((node) => node.shade)).toEqual(shades);
      expect(groups.map((node) => node.count)).toEqual(
        SUMMARY_GROUPS[grouping].groups.map((group) => group.count),
      );
    },
  );

  it('links each upstream group to its router when that router is drawn, and only then', () => {
    // Act
    const { edges } = overviewOf(summary, 'upstream');

    // Assess
    expect(edges.map((edge) => edge.id)).toEqual(['router:edge-uuid>hub-uuid', 'group:hub-uuid']);
    expect(edges[1]).toMatchObject({ source: 'group:upstream:hub-uuid', target: 'hub-uuid' });
  });

  it.each([
    [{ value: 'pending', label: 'pending', count: 1, unhealthy: 1 }, 'pending: 1 site, 1 not healthy'],
    [{ value: 'hub', label: 'via hub', count: 4999, unhealthy: 0 }, 'via hub: 4999 sites'],
  ])('reads a group as %j', (group, text) => {
    // Act / Assess
    expect(groupText(group)).toBe(text);
  });
});

describe('checking the drawn sites against the API', () => {
  it('finds nothing when the page drew exactly the API`s sites', () => {
    // Prepare
    const { nodes } = graphOf([HUB, FOG_A, EDGE], LINKS);

    // Act
    const drawn = nodes.filter((node) => node.kind === 'site').map((node) => node.id);

    // Assess
    expect(compareDrawnSites([HUB, FOG_A, EDGE], drawn)).toEqual({ missing: [], unknown: [] });
  });

  it('catches a drawn site the API does not have, and an API site not drawn (a deliberately wrong fixture)', () => {
    // Prepare: the page's fixture holds a site the API never answered, and lacks one it did
    const wrongFixture = [HUB, FOG_A, site('ghost-uuid', { name: 'ghost' })];

    // Act
    const { nodes } = graphOf(wrongFixture, LINKS);
    const drawn = nodes.filter((node) => node.kind === 'site').map((node) => node.id);

    // Assess
    expect(compareDrawnSites([HUB, FOG_A, EDGE], drawn)).toEqual({
      missing: ['edge-uuid'],
      unknown: ['ghost-uuid'],
    });
  });
});

describe('the tables', () => {
  it('lists the hub first, then sites by name, with what is heard and acknowledged; the filter matches any cell', () => {
    // Prepare
    const now = Date.parse('2026-12-04T12:00:30Z');
    const sites = [
      site('z', { name: 'zeta', online: false, lastSeen: '2026-12-04T11:58:00Z', state: 'offline' }),
      { ...HUB, configVersion: 7, acknowledgedVersion: 6, rebuildPending: true },
      site('a', { name: 'alpha', lastSeen: null, online: false }),
      site('d', {
        kind: 'default-router',
        name: 'default-router',
        online: null,
        lastSeen: null,
        natsMode: null,
      }),
    ];

    // Act
    const rows = siteRows(sites, '', now);
    const offline = siteRows(sites, 'OFFLINE', now);

    // Assess
    expect(rows.map((row) => [row.name, row.mode, row.state, row.heard, row.config])).toEqual([
      ['hub', 'interior (hub) / NATS server', 'applied', 'online, 30 s ago', '6 of 7, rebuild pending'],
      ['alpha', 'edge / NATS leaf', 'applied', 'never', '—'],
      ['default-router', 'edge', 'applied', 'not polled', '—'],
      ['zeta', 'edge / NATS leaf', 'offline', 'silent, 150 s ago', '—'],
    ]);
    expect(offline.map((row) => row.name)).toEqual(['zeta']);
  });

  it('lists services with their connector site by name and how many sites applied them', () => {
    // Act
    const rows = serviceRows(
      [
        {
          name: 'payments',
          type: 'external',
          bridgePort: 10025,
          status: 'ready',
          connector: 'hub-uuid',
          hub: 'hub-uuid',
          sites: { expected: 6, applied: 5, pending: 0, offline: 1 },
        },
        {
          name: 'checkout',
          type: 'microservice',
          bridgePort: null,
          status: 'pending',
          connector: 'gone',
          hub: null,
          sites: { expected: 0, applied: 0, pending: 0, offline: 0 },
        },
      ],
      [HUB],
    );

    // Assess
    expect(rows).toEqual([
      {
        name: 'checkout',
        type: 'microservice',
        port: '—',
        status: 'pending',
        connector: 'gone',
        sites: '0 of 0 applied',
      },
      {
        name: 'payments',
        type: 'external',
        port: '10025',
        status: 'ready',
        connector: 'hub',
        sites: '5 of 6 applied, 1 offline',
      },
    ]);
  });
});
