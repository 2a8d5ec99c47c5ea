import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAgentMicroservices } from '../../shared/commands/agent-protocol.js';
import { deleteAgent } from '../../shared/commands/agents.js';
import { getNatsInstance } from '../../shared/store/nats.js';
import { bridgesOf, changeAgent, givenAgent, givenService, routerOf } from './fleet.js';
import { newWorld, stopStore, type World } from './harness.js';

/**
 * An agent's own part, by its reconcile: the listeners its tags select, its NATS process by mode and
 * role, the router microservice it is listed (only once its config can run), and what its delete
 * leaves. Given the fleet below, when the agent is created or changed and its reconciles run, then it
 * holds exactly this.
 */

let fleet: World;
let hub: string;

beforeAll(async () => {
  fleet = await newWorld();
  hub = await givenAgent(fleet, { name: 'hub', host: 'hub.example.com' });
  await givenAgent(fleet, {
    uuid: 'srv',
    name: 'srv',
    host: '10.0.0.9',
    routerMode: 'none',
    natsMode: 'server',
  });
  await fleet.settle();
  for (const [name, tags] of [
    ['blue', ['blue']],
    ['green', ['green']],
    ['both', ['blue', 'green']],
  ] as const) {
    await givenService(fleet, {
      name,
      type: 'external',
      resource: `${name}.example.com`,
      targetPort: 443,
      tags,
    });
  }
  await fleet.settle();
}, 120_000);

afterAll(async () => {
  fleet?.dispose();
  await stopStore();
});

const tag = (token: string) => `service.iofog.org/tag: ${token}`;

describe('the listeners an agent holds, by its tags', () => {
  it.each<{ tags: string[]; retagged?: string[]; holds: string[] }>([
    { tags: [tag('blue')], holds: ['blue-listener', 'both-listener'] },
    { tags: [tag('green')], holds: ['both-listener', 'green-listener'] },
    { tags: [tag('all')], holds: ['blue-listener', 'both-listener', 'green-listener'] },
    { tags: ['blue', `${tag('')}`.trim()], holds: [] },
    { tags: ['service.iofog.org/tag:blue'], holds: [] },
    { tags: [tag('blue')], retagged: [tag('green')], holds: ['both-listener', 'green-listener'] },
    { tags: [tag('all')], retagged: [], holds: [] },
  ])('tags $tags, then $retagged: holds $holds', async ({ tags, retagged, holds }) => {
    // Prepare
    const world = await newWorld({}, fleet);

    // Act
    await givenAgent(world, { uuid: 'fog', name: 'fog', host: '10.0.0.5', tags, natsMode: 'none' });
    await world.settle();
    if (retagged) {
      await changeAgent(world, 'fog', { tags: retagged });
      await world.settle();
    }

    // Assess
    expect((await bridgesOf(world, 'fog')).listeners).toEqual(holds);
    world.dispose();
  });
});

describe('the NATS process of an agent, by its mode', () => {
  it.each<{ body: Record<string, unknown>; role: string | undefined; listed: boolean }>([
    { body: { natsMode: 'leaf' }, role: 'leaf', listed: true },
    { body: { natsMode: 'leaf', upstreamNatsServers: ['srv'] }, role: 'leaf', listed: true },
    { body: { natsMode: 'server' }, role: 'server', listed: true },
    { body: { natsMode: 'none' }, role: undefined, listed: false },
  ])('$body: role $role', async ({ body, role, listed }) => {
    // Prepare
    const world = await newWorld({}, fleet);

    // Act
    await givenAgent(world, { uuid: 'fog', name: 'fog', host: '10.0.0.5', ...body });
    await world.settle();

    // Assess
    const instance = await world.run(() => getNatsInstance('fog'));
    expect(instance?.role).toBe(role);
    const items = await world.run(() => listAgentMicroservices('fog'));
    expect(items.some((item) => item.isNats)).toBe(listed);
    world.dispose();
  });

  it('a server that becomes a leaf re-renders the hub, and its NATS files follow its role', async () => {
    // Prepare
    const world = await newWorld({}, fleet);

    // Act
    await changeAgent(world, 'srv', { natsMode: 'leaf' });
    await world.settle();

    // Assess
    expect((await world.run(() => getNatsInstance('srv')))?.role).toBe('leaf');
    expect((await world.run(() => getNatsInstance(hub)))?.role).toBe('hub');
    world.dispose();
  });
});

describe('a NATS server that leaves link to', () => {
  it.each<{ act: string; run: (world: World) => Promise<unknown>; message: string | undefined }>([
    {
      act: 'deleting it',
      run: (world) => world.run(() => deleteAgent('srv')),
      message: 'Agent srv is the upstream NATS server of leafy',
    },
    {
      act: 'turning it into a leaf',
      run: (world) => changeAgent(world, 'srv', { natsMode: 'leaf' }),
      message: "Field 'natsMode': agent srv is the upstream NATS server of leafy; it must stay server",
    },
    {
      act: 'deleting it once the leaf names another server',
      run: async (world) => {
        await changeAgent(world, 'leafy', { upstreamNatsServers: ['default-nats-hub'] });
        await world.run(() => deleteAgent('srv'));
      },
      message: undefined,
    },
  ])('$act: $message', async ({ run, message }) => {
    // Prepare
    const world = await newWorld({}, fleet);
    await givenAgent(world, {
      uuid: 'leafy',
      name: 'leafy',
      routerMode: 'none',
      natsMode: 'leaf',
      upstreamNatsServers: ['srv'],
    });
    await world.settle();

    // Act
    const refused = await run(world).then(
      () => undefined,
      (error: Error) => error.message,
    );

    // Assess
    expect(refused).toBe(message);
    world.dispose();
  });
});

describe('the router microservice an agent is listed', () => {
  it('none before its reconcile made its config; then one whose config a Router can run', async () => {
    // Prepare
    const world = await newWorld({}, fleet);
    await givenAgent(world, { uuid: 'fog', name: 'fog', host: '10.0.0.5', natsMode: 'none' });

    // Act
    const before = await world.run(() => listAgentMicroservices('fog'));
    await world.settle();
    const after = await world.run(() => listAgentMicroservices('fog'));

    // Assess
    expect(before.filter((item) => item.isRouter)).toEqual([]);
    const router = after.find((item) => item.isRouter)!;
    const config = JSON.parse(router.config) as { metadata: unknown; connectors: Record<string, unknown> };
    expect(config.metadata).toEqual({ helloMaxAgeSeconds: '3', id: 'fog', mode: 'edge' });
    expect(Object.keys(config.connectors)).toEqual([hub]);
    expect(router.volumeMappings).toHaveLength(2);
    expect(router.rebuild).toBe(false);
    world.dispose();
  });

  it('an agent with router mode none is listed no router, and has no router config', async () => {
    // Prepare
    const world = await newWorld({}, fleet);

    // Act
    await givenAgent(world, { uuid: 'fog', name: 'fog', routerMode: 'none', natsMode: 'none' });
    await world.settle();

    // Assess
    expect((await world.run(() => listAgentMicroservices('fog'))).some((item) => item.isRouter)).toBe(false);
    await expect(routerOf(world, 'fog')).rejects.toThrow(
      'Agent fog has router mode none: it has no router config',
    );
    world.dispose();
  });
});

describe('what a deleted agent leaves', () => {
  it.each(['leaf', 'server', 'none'])('natsMode %s: nothing of it in the store', async (natsMode) => {
    // Prepare
    const world = await newWorld({}, fleet);
    await givenAgent(world, { uuid: 'gone', name: 'gone', host: '10.0.0.5', natsMode, tags: [tag('all')] });
    await world.settle();
    const before = new Set((await world.items()).map((item) => `${item.PK}|${item.SK}`));

    // Act
    await world.run(() => deleteAgent('gone'));
    await world.settle();

    // Assess: nothing left names it (its change record keeps its counters: a later request never reuses
    // a number)
    const left = (await world.items()).filter(
      (item) => JSON.stringify(item).includes('"gone') && item.PK !== 'ROUTERREQ#gone',
    );
    expect(left.map((item) => `${item.PK}|${item.SK}`)).toEqual([]);
    expect(before.size).toBeGreaterThan(0);
    world.dispose();
  });
});
