import { describe, expect, it } from 'vitest';
import {
  agentSite,
  carriesTag,
  checkRouterLink,
  countTopology,
  GROUPS_LISTED,
  groupSites,
  hubNeighbourhood,
  natsLinks,
  type RouterLink,
  routerLinks,
  type TopologyAgent,
  unhealthySites,
} from '../../shared/domain/topology.js';
import { topologySite } from '../fixtures/topology-sites.js';

const agent = (uuid: string, overrides: Partial<TopologyAgent> = {}): TopologyAgent => ({
  uuid,
  name: uuid,
  host: `${uuid}.example.com`,
  tags: [],
  routerMode: 'edge',
  natsMode: 'leaf',
  interRouterPort: null,
  edgeRouterPort: null,
  upstreamRouters: ['default-router'],
  ...overrides,
});
const fleet = (...agents: TopologyAgent[]) => new Map(agents.map((each) => [each.uuid, each]));
const HUB_AGENT = agent('hub', { routerMode: 'interior', natsMode: 'server', upstreamRouters: [] });
const DEFAULT_ROUTER_ON_HUB = {
  host: 'hub.example.com',
  interRouterPort: 55671,
  edgeRouterPort: 45671,
  agentUuid: 'hub',
};
const STANDALONE = {
  host: 'router.example.com',
  interRouterPort: 56000,
  edgeRouterPort: 46000,
  agentUuid: null,
};

describe('a site state', () => {
  const context = { hubKey: 'hub', now: Date.parse('2026-12-04T12:00:10Z'), offlineAfterMs: 60_000 };
  const heard = Date.parse('2026-12-04T12:00:00Z');
  it.each([
    ['nothing waiting, heard from', { lastActive: heard }, 'applied', true],
    ['nothing waiting, never heard from: never applied', {}, 'offline', false],
    [
      'its first config not written yet',
      { firstConfig: true, waitingSince: '2026-12-04T11:59:00Z' },
      'new',
      false,
    ],
    [
      'acknowledged an older config version',
      { lastActive: heard, changes: { configVersion: 4, acknowledgedVersion: 3, rebuildPending: false } },
      'pending',
      true,
    ],
    ['a marker, heard from', { lastActive: heard, waitingSince: '2026-12-04T11:59:00Z' }, 'pending', true],
    [
      'a marker, silent',
      { lastActive: heard - 120_000, waitingSince: '2026-12-04T11:59:00Z' },
      'offline',
      false,
    ],
    [
      'a rebuild owed, heard from',
      { lastActive: heard, changes: { configVersion: 3, acknowledgedVersion: 3, rebuildPending: true } },
      'pending',
      true,
    ],
  ] as const)('%s: %s', (_case, facts, state, online) => {
    // Act
    const site = agentSite(agent('fog-a'), facts, context);

    // Assess
    expect(site).toMatchObject({ key: 'fog-a', state, online, hub: false });
  });

  it('marks the hub', () => {
    // Act / Assess
    expect(agentSite(HUB_AGENT, {}, context).hub).toBe(true);
  });
});

describe('router links', () => {
  it.each<[string, TopologyAgent[], typeof DEFAULT_ROUTER_ON_HUB | typeof STANDALONE, Partial<RouterLink>[]]>(
    [
      [
        'an edge agent dials the hub agent on its edge port',
        [HUB_AGENT, agent('fog-a')],
        DEFAULT_ROUTER_ON_HUB,
        [{ from: 'fog-a', to: 'hub', role: 'edge', host: 'hub.example.com', port: 45671 }],
      ],
      [
        'an interior agent dials the standalone default router on its inter-router port',
        [agent('fog-i', { routerMode: 'interior' })],
        STANDALONE,
        [
          {
            from: 'fog-i',
            to: 'default-router',
            role: 'inter-router',
            host: 'router.example.com',
            port: 56000,
          },
        ],
      ],
      [
        'the hub does not dial itself',
        [HUB_AGENT, agent('hub2', { routerMode: 'none' })],
        DEFAULT_ROUTER_ON_HUB,
        [],
      ],
      [
        'an edge agent under an interior agent, on that agent`s own edge port',
        [
          HUB_AGENT,
          agent('fog-i', { routerMode: 'interior', edgeRouterPort: 45999 }),
          agent('fog-e', { upstreamRouters: ['fog-i'] }),
        ],
        DEFAULT_ROUTER_ON_HUB,
        [
          { from: 'fog-i', to: 'hub', role: 'inter-router', port: 55671 },
          { from: 'fog-e', to: 'fog-i', role: 'edge', host: 'fog-i.example.com', port: 45999 },
        ],
      ],
      [
        'an upstream that is an edge router, or has no host, is not dialed',
        [
          HUB_AGENT,
          agent('fog-x'),
          agent('fog-n', { routerMode: 'interior', host: null }),
          agent('fog-e', { upstreamRouters: ['fog-x', 'fog-n'] }),
        ],
        DEFAULT_ROUTER_ON_HUB,
        [
          { from: 'fog-x', to: 'hub' },
          { from: 'fog-n', to: 'hub' },
        ],
      ],
    ],
  )('%s', (_case, agents, defaultRouter, expected) => {
    // Act
    const links = routerLinks(fleet(...agents), defaultRouter);

    // Assess
    expect(links).toHaveLength(expected.length);
    expect(links).toEqual(
      expected.map((link) => expect.objectContaining({ kind: 'router', held: null, ...link })),
    );
  });
});

describe('whether both ends hold a router link', () => {
  const link: RouterLink = {
    kind: 'router',
    from: 'fog-a',
    to: 'hub',
    role: 'edge',
    host: 'hub.example.com',
    port: 45671,
    held: null,
  };
  const dialer = {
    connectors: {
      hub: { name: 'hub', role: 'edge' as const, host: 'hub.example.com', port: '45671', sslProfile: 's' },
    },
  };
  const upstream = {
    listeners: { 'hub-edge': { name: 'hub-edge', role: 'edge' as const, host: '0.0.0.0', port: 45671 } },
  };
  const ends = {
    dialerConfig: dialer,
    upstreamConfig: upstream,
    upstreamIsAgent: true,
    dialerState: 'applied' as const,
    upstreamState: 'applied' as const,
    names: { from: 'fog-a', to: 'hub' },
  };
  it.each([
    ['both hold it and applied', {}, true, undefined],
    [
      'the dialer has no connector',
      { dialerConfig: { connectors: {} } },
      false,
      "fog-a's router config has no edge connector to hub.example.com:45671",
    ],
    [
      'the dialer connects to an old port',
      { dialerConfig: { connectors: { hub: { ...dialer.connectors.hub, port: '45000' } } } },
      false,
      "fog-a's router config has no edge connector to hub.example.com:45671",
    ],
    [
      'the hub has no edge listener',
      { upstreamConfig: { listeners: {} } },
      false,
      "hub's router config has no edge listener on port 45671",
    ],
    [
      'a standalone default router is taken to listen',
      { upstreamConfig: undefined, upstreamIsAgent: false },
      true,
      undefined,
    ],
    [
      'the dialer has not applied',
      { dialerState: 'pending' as const },
      false,
      'fog-a (dialer) has not applied its router config (pending)',
    ],
    [
      'the hub is offline with a change',
      { upstreamState: 'offline' as const },
      false,
      'hub (upstream) has not applied its router config (offline)',
    ],
  ])('%s', (_case, overrides, held, reason) => {
    // Act
    const checked = checkRouterLink(link, { ...ends, ...overrides });

    // Assess
    expect(checked.held).toBe(held);
    expect(checked.reason).toBe(reason);
  });
});

describe('NATS links', () => {
  it('links each leaf to its servers (the hub by default) and every pair of servers once', () => {
    // Prepare
    const agents = fleet(
      HUB_AGENT,
      agent('s2', { natsMode: 'server', natsPorts: { clusterPort: 6333, leafPort: 7444 } }),
      agent('leaf-a'),
      agent('leaf-b', { upstreamNatsServers: ['s2'] }),
      agent('quiet', { natsMode: 'none' }),
    );

    // Act
    const links = natsLinks(agents, { host: 'hub.example.com', leafPort: 7422, agentUuid: 'hub' });

    // Assess
    expect(links).toEqual([
      { kind: 'nats-leaf', from: 'leaf-a', to: 'hub', host: 'hub.example.com', port: 7422 },
      { kind: 'nats-leaf', from: 'leaf-b', to: 's2', host: 's2.example.com', port: 7444 },
      { kind: 'nats-route', from: 'hub', to: 's2', host: 's2.example.com', port: 6333 },
    ]);
  });

  it('names the hub default-nats-hub when it is not an agent', () => {
    // Act
    const links = natsLinks(fleet(agent('leaf-a')), {
      host: 'nats.example.com',
      leafPort: 7422,
      agentUuid: null,
    });

    // Assess
    expect(links).toEqual([
      { kind: 'nats-leaf', from: 'leaf-a', to: 'default-nats-hub', host: 'nats.example.com', port: 7422 },
    ]);
  });
});

describe('tags, counts, the unhealthy and the hub neighbourhood', () => {
  const site = topologySite;

  it.each([
    ['service.iofog.org/tag: checkout', 'checkout', true],
    ['service.iofog.org/tag: checkout', 'service.iofog.org/tag: checkout', true],
    ['plant-7', 'plant-7', true],
    ['service.iofog.org/tag:checkout', 'checkout', false],
  ])('an agent tagged %j carries %j: %s', (tag, wanted, carries) => {
    // Act / Assess
    expect(carriesTag({ tags: [tag] }, wanted, 'service.iofog.org/tag')).toBe(carries);
  });

  it('counts sites by mode and state, heard and silent, and links by kind', () => {
    // Act
    const counts = countTopology(
      [
        site('hub', { routerMode: 'interior', hub: true }),
        site('a', { state: 'pending' }),
        site('b', { state: 'offline', online: false }),
      ],
      [
        { kind: 'router', from: 'a', to: 'hub', role: 'edge', host: 'h', port: 1, held: null },
        { kind: 'nats-leaf', from: 'a', to: 'hub', host: 'h', port: 2 },
      ],
    );

    // Assess
    expect(counts).toEqual({
      sites: 3,
      byRouterMode: { interior: 1, edge: 2, none: 0 },
      byState: { applied: 1, pending: 1, offline: 1, new: 0 },
      online: 2,
      silent: 1,
      routerLinks: 1,
      natsLinks: 1,
    });
  });

  it('lists the unhealthy sites, the longest waiting first, silent ones too', () => {
    // Act
    const unhealthy = unhealthySites([
      site('fine'),
      site('late', { state: 'pending', since: '2026-12-04T11:00:00Z' }),
      site('early', { state: 'offline', online: false, since: '2026-12-04T10:00:00Z' }),
      site('quiet', { online: false }),
    ]);

    // Assess
    expect(unhealthy.map((each) => each.key)).toEqual(['early', 'late', 'quiet']);
  });

  it('keeps the hub, its neighbours and the links between them', () => {
    // Prepare
    const sites = [site('hub', { hub: true }), site('a'), site('b'), site('c')];
    const links: RouterLink[] = [
      { kind: 'router', from: 'a', to: 'hub', role: 'edge', host: 'h', port: 1, held: null },
      { kind: 'router', from: 'b', to: 'hub', role: 'edge', host: 'h', port: 1, held: null },
      { kind: 'router', from: 'c', to: 'b', role: 'edge', host: 'h', port: 1, held: null },
    ];

    // Act
    const around = hubNeighbourhood(sites, links);

    // Assess
    expect(around.sites.map((each) => each.key)).toEqual(['hub', 'a', 'b']);
    expect(around.links.map((link) => link.from)).toEqual(['a', 'b']);
    expect(around.more).toBe(0);
  });
});

describe('the summary groups sites by state, by the router they dial and by tag', () => {
  const link = (from: string, to: string): RouterLink => ({
    kind: 'router',
    from,
    to,
    role: 'edge',
    host: `${to}.example.com`,
    port: 45671,
    held: true,
  });
  const sites = [
    topologySite('hub', { name: 'hub', hub: true }),
    topologySite('i1', { name: 'interior-1' }),
    topologySite('e1', { state: 'pending' }),
    topologySite('e2', { online: false }),
    topologySite('e3', { state: 'new', online: null }),
    topologySite('e4'),
  ];
  const links = [
    link('i1', 'hub'),
    link('e1', 'i1'),
    link('e2', 'i1'),
    link('e3', 'hub'),
    link('e4', 'i1'),
    link('e4', 'hub'),
  ];
  const tags: Record<string, string[]> = {
    e1: ['service.iofog.org/tag: checkout', 'zone-a'],
    e2: ['service.iofog.org/tag: checkout'],
    e4: ['zone-a', 'service.iofog.org/tag: zone-a'],
  };

  it.each([
    [
      'state',
      [
        { value: 'applied', label: 'applied', count: 4, unhealthy: 1 },
        { value: 'new', label: 'new', count: 1, unhealthy: 1 },
        { value: 'pending', label: 'pending', count: 1, unhealthy: 1 },
      ],
    ],
    [
      'upstream',
      [
        { value: 'hub', label: 'via hub', count: 3, unhealthy: 1 },
        { value: 'i1', label: 'via interior-1', count: 3, unhealthy: 2 },
        { value: 'none', label: 'no upstream router', count: 1, unhealthy: 0 },
      ],
    ],
    [
      'tag',
      [
        { value: 'checkout', label: 'tag checkout', count: 2, unhealthy: 2 },
        { value: 'zone-a', label: 'tag zone-a', count: 2, unhealthy: 1 },
      ],
    ],
  ] as const)('by %s', (grouping, groups) => {
    // Act
    const grouped = groupSites(sites, links, (key) => tags[key] ?? [], 'service.iofog.org/tag');

    // Assess: a site dialling two routers counts under both; a token and a plain tag of one name once
    expect(grouped[grouping]).toEqual({ groups, more: 0 });
  });

  it(`lists the ${GROUPS_LISTED} largest groups and counts the rest`, () => {
    // Prepare: one site per tag, and one tag on three sites
    const many = Array.from({ length: GROUPS_LISTED + 5 }, (_, i) => topologySite(`s${i}`));
    const tagOf = (key: string) => (['s0', 's1', 's2'].includes(key) ? ['big', `t${key}`] : [`t${key}`]);

    // Act
    const grouped = groupSites(many, [], tagOf, 'service.iofog.org/tag').tag;

    // Assess
    expect(grouped.groups).toHaveLength(GROUPS_LISTED);
    expect(grouped.groups[0]).toEqual({ value: 'big', label: 'tag big', count: 3, unhealthy: 0 });
    expect(grouped.more).toBe(6);
  });
});
