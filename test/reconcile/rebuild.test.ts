import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acknowledgeAgentChanges } from '../../shared/commands/agent-protocol.js';
import { requestAgentReconcile } from '../../shared/commands/agents.js';
import { putDefaultRouterFromBody } from '../../shared/commands/router.js';
import { putRouterBody } from '../../shared/domain/router-schema.js';
import { acknowledgeChanges } from '../../shared/store/changes.js';
import {
  changeAgent,
  changeService,
  changesOf,
  givenAgent,
  givenService,
  removeService,
  routerOf,
} from './fleet.js';
import { newWorld, stopStore, type World } from './harness.js';

/**
 * Which agents owe their router a rebuild after a change: a running Datasance Router applies only
 * `bridges`, so a change to anything else it starts with (links, listeners, ports, mode, TLS profiles,
 * its image) is served with `rebuild` until the agent acknowledges it; a change to `bridges` alone, or a
 * certificate renewed at the same path, never is. Given a fleet whose agents acknowledged everything,
 * when the change is made and every reconcile it starts has run, then exactly these agents owe one; a
 * router that dials a link anew is told only after the agent it dials acknowledged its side (then).
 */

let fleet: World;
let hub: string;
const AGENTS = ['fog-a', 'fog-b', 'fog-i'] as const;

beforeAll(async () => {
  fleet = await newWorld();
  hub = await givenAgent(fleet, { name: 'hub', host: 'hub.example.com' });
  await givenAgent(fleet, {
    uuid: 'fog-i',
    name: 'fog-i',
    host: '10.0.0.6',
    routerMode: 'interior',
    natsMode: 'none',
  });
  await givenAgent(fleet, { uuid: 'fog-a', name: 'fog-a', host: '10.0.0.5', natsMode: 'none' });
  await givenAgent(fleet, {
    uuid: 'fog-b',
    name: 'fog-b',
    host: '10.0.0.7',
    upstreamRouters: ['fog-i'],
    tags: ['service.iofog.org/tag: shop'],
    natsMode: 'none',
  });
  await fleet.settle();
  await acknowledgeAll(fleet);
}, 120_000);

afterAll(async () => {
  fleet?.dispose();
  await stopStore();
});

/** Every agent acknowledges everything it was told (its running router is current). */
async function acknowledgeAll(world: World): Promise<void> {
  for (const uuid of [hub, ...AGENTS]) {
    const { lastUpdated } = await changesOf(world, uuid);
    if (lastUpdated > 0) await world.run(() => acknowledgeChanges(uuid, lastUpdated));
  }
}

/** The agents (by name) whose router owes a rebuild. */
async function rebuilding(world: World): Promise<string[]> {
  const names: string[] = [];
  for (const [name, uuid] of [['hub', hub], ...AGENTS.map((agent) => [agent, agent])] as const) {
    const state = await changesOf(world, uuid);
    if (state.rebuildRouter) {
      // A rebuild is always told with the flags that make Edgelet fetch the list.
      expect(state.flags.microserviceList, name).toBe(true);
      names.push(name);
    }
  }
  return names;
}

const router = (body: Record<string, unknown>) => putRouterBody.parse(body);

/**
 * Every agent acknowledges what it was told, through the agent route's command (which re-drives the
 * routers held for it), and every reconcile that starts has run.
 */
async function acknowledgeAsAgents(world: World): Promise<void> {
  for (const uuid of [hub, ...AGENTS]) {
    const { lastUpdated } = await changesOf(world, uuid);
    if (lastUpdated > 0) await world.run(() => acknowledgeAgentChanges(uuid, { lastUpdated }));
  }
  await world.settle();
}

describe('router rebuilds', () => {
  it.each<{
    change: string;
    act: (world: World) => Promise<unknown>;
    rebuilt: string[];
    /** Dialers told once the agents they dial acknowledged their side of the new link (rollout order). */
    thenRebuilt?: string[];
  }>([
    {
      change:
        "the hub agent's host (every router dialing the hub links anew, once the hub holds its new certificate)",
      act: (world) => changeAgent(world, hub, { host: 'hub2.example.com' }),
      rebuilt: [],
      thenRebuilt: ['fog-a', 'fog-i'],
    },
    {
      change: 'the default router registered under another host (PUT /api/v3/router)',
      act: (world) => world.run(() => putDefaultRouterFromBody(router({ host: 'edge.hub.example.com' }))),
      rebuilt: [],
      thenRebuilt: ['fog-a', 'fog-i'],
    },
    {
      change: "an edge agent's upstream routers",
      act: (world) => changeAgent(world, 'fog-a', { upstreamRouters: ['fog-i'] }),
      rebuilt: ['fog-a'],
    },
    {
      change: "an edge agent's router mode, to interior",
      act: (world) => changeAgent(world, 'fog-b', { routerMode: 'interior' }),
      rebuilt: ['fog-b'],
    },
    {
      change: "an interior router's edge port (its listener, and the link of the edge router below it)",
      act: (world) => changeAgent(world, 'fog-i', { edgeRouterPort: 45999 }),
      rebuilt: ['fog-i'],
      thenRebuilt: ['fog-b'],
    },
    {
      change: "an interior router's inter-router port (no edge router dials it)",
      act: (world) => changeAgent(world, 'fog-i', { interRouterPort: 55999 }),
      rebuilt: ['fog-i'],
    },
    {
      change: "an edge agent's messaging port",
      act: (world) => changeAgent(world, 'fog-a', { messagingPort: 5999 }),
      rebuilt: ['fog-a'],
    },
    {
      change:
        "an interior router's host (the edge router below dials it anew; its own certificate is renewed in place)",
      act: (world) => changeAgent(world, 'fog-i', { host: '10.0.0.66' }),
      rebuilt: [],
      thenRebuilt: ['fog-b'],
    },
    {
      change: "the hub agent's NATS ports (no router reads them)",
      act: (world) => changeAgent(world, hub, { natsServerPort: 14222 }),
      rebuilt: [],
    },
    {
      change: "an agent's tags (only its bridges change)",
      act: (world) => changeAgent(world, 'fog-a', { tags: ['service.iofog.org/tag: shop'] }),
      rebuilt: [],
    },
    {
      change: "an edge agent's host (its certificates renewed in place)",
      act: (world) => changeAgent(world, 'fog-a', { host: '10.0.0.55' }),
      rebuilt: [],
    },
    {
      change: "an agent's NATS mode (its router is not concerned)",
      act: (world) => changeAgent(world, 'fog-a', { natsMode: 'leaf' }),
      rebuilt: [],
    },
    {
      change: 'a service created, changed and deleted',
      act: async (world) => {
        await givenService(world, {
          name: 'shop',
          type: 'external',
          resource: 'shop.example.com',
          targetPort: 443,
          tags: ['shop'],
        });
        await world.settle();
        await changeService(world, 'shop', { targetPort: 8443, tags: ['shop', 'more'] });
        await world.settle();
        await removeService(world, 'shop');
      },
      rebuilt: [],
    },
  ])('$change: rebuilt $rebuilt, then $thenRebuilt', async ({ act, rebuilt, thenRebuilt = [] }) => {
    // Prepare
    const world = await newWorld({}, fleet);

    // Act
    await act(world);
    await world.settle();
    const first = await rebuilding(world);
    await acknowledgeAsAgents(world);
    const then = await rebuilding(world);
    await acknowledgeAsAgents(world);

    // Assess
    expect(first).toEqual(rebuilt);
    expect(then).toEqual(thenRebuilt);
    world.dispose();
  });

  it('a new router image rebuilds every router at its next full computation (a drift repair)', async () => {
    // Prepare: the same store, deployed with another router image
    const world = await newWorld({}, fleet, {
      router: { image: 'ghcr.io/datasance/router:3.9.1', registryId: 1 },
    });

    // Act
    for (const uuid of [hub, ...AGENTS]) await world.run(() => requestAgentReconcile(uuid));
    await world.settle();

    // Assess
    expect(await rebuilding(world)).toEqual(['hub', 'fog-a', 'fog-b', 'fog-i']);
    world.dispose();
  });

  it('holds until the agent acknowledges, then clears; a rebuild told is not told again', async () => {
    // Prepare
    const world = await newWorld({}, fleet);
    await changeAgent(world, 'fog-a', { upstreamRouters: ['fog-i'] });
    await world.settle();
    const told = await changesOf(world, 'fog-a');

    // Act
    await world.run(() => acknowledgeChanges('fog-a', told.lastUpdated));
    await world.run(() => requestAgentReconcile('fog-a'));
    await world.settle();

    // Assess
    expect(told.rebuildRouter).toBe(true);
    expect((await changesOf(world, 'fog-a')).rebuildRouter).toBe(false);
    expect(Object.keys((await routerOf(world, 'fog-a')).connectors as object)).toEqual(['fog-i']);
    world.dispose();
  });
});
