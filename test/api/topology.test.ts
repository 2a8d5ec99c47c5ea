import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintUserToken } from '../../infra/local/auth.js';
import type { Topology } from '../../shared/commands/topology.js';
import { createAgent, createSeedWorld, FOG_A } from '../fixtures/world.js';
import { ApiClient, eventually } from '../support/client.js';
import { routersQuiescent } from '../support/quiescent.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';
import { ScriptedAgent } from '../support/scripted-agent.js';

/**
 * GET /api/v3/topology over HTTP: the README's fleet (hub, fog-a with orders/checkout, checkout), an
 * interior agent under the hub and an edge agent under it, driven by scripted Edgelets.
 */

let t: TestRuntime;
let viewer: ApiClient;
let hubUuid: string;
let fogI: string;
let fogE: string;
const agents: ScriptedAgent[] = [];

type Full = Extract<Topology, { form: 'full' }>;
type Summary = Extract<Topology, { form: 'summary' }>;

async function topology<T = Full>(query = ''): Promise<T> {
  const answer = await viewer.get<T>(`/api/v3/topology${query}`);
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}

async function provision(uuid: string): Promise<ScriptedAgent> {
  const key = await t.api.get<{ key: string }>(`/api/v3/iofog/${uuid}/provisioning-key`);
  const agent = new ScriptedAgent(t.runtime.url);
  await agent.provision(key.body.key, 1);
  agents.push(agent);
  return agent;
}

/** One tick of Edgelet's status and changes workers. */
async function tick(agent: ScriptedAgent) {
  await agent.reportStatus();
  return agent.poll();
}

const tickAll = () => Promise.all(agents.map(tick));

beforeAll(async () => {
  t = await startTestRuntime();
  viewer = new ApiClient(t.runtime.url, await mintUserToken(t.dataDir, { role: 'viewer', subject: 'vera' }));
  ({ hub: hubUuid } = await createSeedWorld(t.api, { checkoutService: true }));
  fogI = await createAgent(t.api, {
    name: 'fog-i',
    host: '10.0.0.9',
    routerMode: 'interior',
    tags: ['plant-7'],
  });
  fogE = await createAgent(t.api, {
    name: 'fog-e',
    host: '10.0.0.10',
    upstreamRouters: [fogI],
    tags: ['plant-7'],
  });
}, 120_000);

afterAll(async () => {
  await t?.stop();
});

describe('the topology of a small fleet (full form)', () => {
  it('shows every site, its router and NATS links, and a link not held until both ends run it', async () => {
    // Act: nothing provisioned yet
    const before = await eventually(async () => {
      const now = await topology();
      return now.services?.[0]?.status === 'ready' ? now : undefined;
    }, 'checkout ready');

    // Assess
    expect(before.form).toBe('full');
    expect(before.sites.map((site) => [site.name, site.routerMode, site.hub, site.lastSeen]).sort()).toEqual([
      ['fog-a', 'edge', false, null],
      ['fog-e', 'edge', false, null],
      ['fog-i', 'interior', false, null],
      ['hub', 'interior', true, null],
    ]);
    const linkOf = (body: Full, from: string, kind = 'router') =>
      body.links.find((link) => link.from === from && link.kind === kind);
    expect(linkOf(before, fogE)).toMatchObject({
      to: fogI,
      role: 'edge',
      host: '10.0.0.9',
      port: 45671,
      held: false,
    });
    expect(linkOf(before, fogI)).toMatchObject({ to: hubUuid, role: 'inter-router', port: 55671 });
    expect(linkOf(before, FOG_A.uuid, 'nats-leaf')).toMatchObject({ to: hubUuid, port: 7422 });
    expect(before.counts).toMatchObject({
      sites: 4,
      routerLinks: 3,
      byRouterMode: { interior: 2, edge: 2, none: 0 },
    });
    expect(before.services).toEqual([
      {
        name: 'checkout',
        type: 'microservice',
        bridgePort: 10024,
        status: 'ready',
        connector: FOG_A.uuid,
        hub: hubUuid,
        sites: expect.objectContaining({ expected: 2 }),
      },
    ]);

    // Act: every agent provisioned and running its configs
    for (const uuid of [hubUuid, FOG_A.uuid, fogI, fogE]) await provision(uuid);
    // Every reconcile the provisioning asked for has run, so the agents' next ticks apply all of it.
    await routersQuiescent(t, [hubUuid, FOG_A.uuid, fogI, fogE]);
    const after = await eventually(async () => {
      await tickAll();
      const now = await topology();
      return now.links.every((link) => link.kind !== 'router' || link.held) ? now : undefined;
    }, 'every router link held');

    // Assess
    expect(after.sites.every((site) => site.state === 'applied' && site.online === true)).toBe(true);
    const fogASite = after.sites.find((site) => site.key === FOG_A.uuid)!;
    expect(fogASite.acknowledgedVersion).toBe(fogASite.configVersion);
    expect(fogASite.rebuildPending).toBe(false);
  });

  it('tells why a link is not held when one end stops applying', async () => {
    // Prepare: fog-i's inter-router port moves; fog-e must dial the new one
    const agentE = agents[3]!;
    const patched = await t.api.patch(`/api/v3/iofog/${fogI}`, {
      interRouterPort: 55999,
      edgeRouterPort: 45999,
    });
    expect(patched.status, patched.text).toBe(204);

    // Act: everyone but fog-e applies
    const waiting = await eventually(async () => {
      await Promise.all(agents.filter((agent) => agent !== agentE).map(tick));
      await agentE.reportStatus();
      const now = await topology();
      const link = now.links.find((each) => each.from === fogE && each.kind === 'router');
      return link?.kind === 'router' && link.port === 45999 && link.reason?.includes('fog-e')
        ? link
        : undefined;
    }, "fog-e's link waiting on fog-e");

    // Assess
    expect(waiting).toMatchObject({ held: false });
    expect(waiting.kind === 'router' ? waiting.reason : '').toMatch(
      /^fog-e('s router config has no edge connector to 10\.0\.0\.9:45999| \(dialer\) has not applied its router config \(pending\))$/,
    );
    await eventually(async () => {
      await tickAll();
      const link = (await topology()).links.find((each) => each.from === fogE && each.kind === 'router');
      return link?.kind === 'router' && link.held ? true : undefined;
    }, 'held again once fog-e applies');
  });

  it('filters by service (with where it is), by agent (by name or uuid, with its neighbours) and by tag', async () => {
    // Act
    const byService = await topology('?service=checkout');
    const byAgentName = await topology('?agent=fog-i');
    const byAgentUuid = await topology(`?agent=${fogI}`);
    const byTag = await topology('?tag=plant-7');
    const byDistributionTag = await topology('?tag=checkout');

    // Assess
    expect(byService.placements).toEqual(
      [
        { site: hubUuid, roles: ['hub'], state: 'applied' },
        { site: FOG_A.uuid, roles: ['connector', 'listener'], state: 'applied' },
      ].sort((a, b) => a.site.localeCompare(b.site)),
    );
    expect(byService.sites.map((site) => site.key).sort()).toEqual([FOG_A.uuid, hubUuid].sort());
    expect(byService.services?.map((service) => service.name)).toEqual(['checkout']);
    expect(byAgentName.sites.map((site) => site.name).sort()).toEqual(['fog-e', 'fog-i', 'hub']);
    expect(byAgentUuid.sites).toEqual(
      byAgentName.sites.map((site) => expect.objectContaining({ key: site.key })),
    );
    expect(byAgentName.services).toEqual([]);
    // The hub is drawn as the far end of fog-i's link, though it is not tagged.
    expect(byTag.counts.sites).toBe(2);
    expect(byTag.sites.map((site) => site.name).sort()).toEqual(['fog-e', 'fog-i', 'hub']);
    expect(byDistributionTag.counts.sites).toBe(1);
    expect(byDistributionTag.services?.map((service) => service.name)).toEqual(['checkout']);
  });

  it('pages the full form by site, each link once on the page of the site that dials it', async () => {
    // Act
    const pages: Full[] = [];
    let after: string | undefined;
    do {
      const page = await topology(`?limit=1${after ? `&after=${after}` : ''}`);
      pages.push(page);
      after = page.next;
    } while (after && pages.length < 10);

    // Assess
    const everything = await topology();
    expect(pages).toHaveLength(4);
    expect(pages.slice(1).every((page) => page.services === undefined)).toBe(true);
    const links = pages.flatMap((page) => page.links).map((link) => `${link.kind} ${link.from}>${link.to}`);
    expect(links.sort()).toEqual(
      everything.links.map((link) => `${link.kind} ${link.from}>${link.to}`).sort(),
    );
  });

  it('answers the summary form when asked: counts, the hub neighbourhood, the unhealthy sites', async () => {
    // Act
    const summary = await topology<Summary>('?form=summary');

    // Assess
    expect(summary.form).toBe('summary');
    expect(summary.counts).toMatchObject({ sites: 4, routerLinks: 3 });
    expect(summary.hub.sites.map((site) => site.name).sort()).toEqual(['fog-a', 'fog-i', 'hub']);
    expect(summary.hub.links.map((link) => link.held)).toEqual([true, true]);
    expect(summary.unhealthy).toEqual({ sites: [], more: 0 });
    expect(summary.services).toEqual({ count: 1, byStatus: { ready: 1 }, notReady: [] });
  });

  it("groups the summary's sites by state, upstream router and tag; each group's filter lists exactly its sites", async () => {
    // Act
    const summary = await topology<Summary>('?form=summary');
    const listed = await Promise.all(
      (['state', 'upstream', 'tag'] as const).flatMap((grouping) =>
        summary.groups[grouping].groups.map(async (group) => {
          const full = await topology(`?form=full&${grouping}=${encodeURIComponent(group.value)}`);
          return { grouping, value: group.value, count: group.count, listed: full.counts.sites };
        }),
      ),
    );

    // Assess
    expect(summary.groups.state).toEqual({
      groups: [{ value: 'applied', label: 'applied', count: 4, unhealthy: 0 }],
      more: 0,
    });
    expect(summary.groups.upstream.groups.map((group) => [group.label, group.count])).toEqual([
      ['via hub', 2],
      ['no upstream router', 1],
      ['via fog-i', 1],
    ]);
    expect(summary.groups.tag.groups.map((group) => [group.value, group.count])).toEqual(
      expect.arrayContaining([
        ['checkout', 1],
        ['plant-7', 2],
      ]),
    );
    expect(listed.filter((group) => group.listed !== group.count)).toEqual([]);
    expect(listed.length).toBeGreaterThanOrEqual(6);
  });

  it('finds sites by a part of their name, in any case', async () => {
    // Act
    const found = await topology('?name=FOG-');
    const none = await topology('?name=nothing-like-it');

    // Assess
    expect(found.counts.sites).toBe(3);
    expect(
      found.sites
        .filter((site) => site.name.startsWith('fog-'))
        .map((site) => site.name)
        .sort(),
    ).toEqual(['fog-a', 'fog-e', 'fog-i']);
    expect(none.counts.sites).toBe(0);
  });

  it('refuses what it cannot answer, naming the parameter and the value', async () => {
    // Act
    const unknownService = await viewer.get<{ message: string }>('/api/v3/topology?service=nope');
    const unknownAgent = await viewer.get<{ message: string }>('/api/v3/topology?agent=nobody');
    const badLimit = await viewer.get<{ message: string }>('/api/v3/topology?limit=0');
    const badForm = await viewer.get<{ message: string }>('/api/v3/topology?form=tree');
    const badState = await viewer.get<{ message: string }>('/api/v3/topology?state=green');
    const unknownUpstream = await viewer.get<{ message: string }>('/api/v3/topology?upstream=nobody');
    const anonymous = await new ApiClient(t.runtime.url, '').get('/api/v3/topology');

    // Assess
    expect([unknownService.status, unknownService.body.message]).toEqual([404, 'Service "nope" not found']);
    expect([unknownAgent.status, unknownAgent.body.message]).toEqual([
      404,
      'Agent "nobody" not found (by uuid or name)',
    ]);
    expect(badLimit.status).toBe(400);
    expect(badLimit.body.message).toMatch(/^Query parameter 'limit'/);
    expect(badForm.status).toBe(400);
    expect(badForm.body.message).toMatch(/'form'.*"tree"/);
    expect(badState.status).toBe(400);
    expect(badState.body.message).toMatch(/'state'.*"green"/);
    expect([unknownUpstream.status, unknownUpstream.body.message]).toEqual([
      404,
      'Agent "nobody" not found (by uuid or name)',
    ]);
    expect(anonymous.status).toBe(401);
  });
});

describe('the topology of a larger fleet', () => {
  it('answers the summary form above 200 sites unless the full one is asked for', async () => {
    // Prepare: 200 more agents without router or NATS
    for (let n = 0; n < 200; n += 1) {
      await createAgent(t.api, {
        name: `quiet-${n}`,
        host: `10.1.${Math.floor(n / 100)}.${(n % 100) + 1}`,
        routerMode: 'none',
        natsMode: 'none',
      });
    }

    // Act
    const summary = await topology<Summary>();
    const full = await topology('?form=full&limit=1000');

    // Assess
    expect(summary.form).toBe('summary');
    expect(summary.counts).toMatchObject({ sites: 204, byRouterMode: { interior: 2, edge: 2, none: 200 } });
    expect(summary.unhealthy.sites).toHaveLength(100);
    expect(summary.unhealthy.more).toBe(100);
    expect(full.form).toBe('full');
    expect(full.sites).toHaveLength(204);
  });
});
