import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acknowledgeAgentChanges, getAgentChanges } from '../../shared/commands/agent-protocol.js';
import { getService } from '../../shared/commands/services.js';
import { putAgentStatus } from '../../shared/store/agent-reports.js';
import { bridgesOf, changeService, givenAgent, givenService, removeService } from './fleet.js';
import { newWorld, stopStore, type World } from './harness.js';

/**
 * A service's fan-out and its per-site status. Given a fleet (the hub, agent a tagged for `shop`, agent b
 * tagged `all`, agent c untagged, agent d tagged for `shop` without a router), when a service changes
 * and its reconcile runs, then exactly these agents are asked to tell their Edgelet (and with `raise`:
 * the listener in a set they select changed), and the service's sites read as the agents acknowledge.
 */

let fleet: World;
let hub: string;

beforeAll(async () => {
  fleet = await newWorld();
  hub = await givenAgent(fleet, { name: 'hub', host: 'hub.example.com' });
  await givenAgent(fleet, {
    uuid: 'a',
    name: 'a',
    host: '10.0.0.1',
    tags: ['service.iofog.org/tag: shop'],
    natsMode: 'none',
  });
  await givenAgent(fleet, {
    uuid: 'b',
    name: 'b',
    host: '10.0.0.2',
    tags: ['service.iofog.org/tag: all'],
    natsMode: 'none',
  });
  await givenAgent(fleet, { uuid: 'c', name: 'c', host: '10.0.0.3', natsMode: 'none' });
  await givenAgent(fleet, {
    uuid: 'd',
    name: 'd',
    routerMode: 'none',
    natsMode: 'none',
    tags: ['service.iofog.org/tag: shop'],
  });
  await fleet.settle();
  await givenService(fleet, {
    name: 'shop',
    type: 'external',
    resource: 'shop.example.com',
    targetPort: 443,
    tags: ['shop'],
  });
  await fleet.settle();
}, 120_000);

afterAll(async () => {
  fleet?.dispose();
  await stopStore();
});

/** The fog reconciles a change asked for about one service: the routers, and whether with `raise`. */
function toldAbout(world: World, service: string, from: number): string[] {
  return world.sent
    .slice(from)
    .flatMap((sent) =>
      sent.queue === 'fog' && sent.body.service === service
        ? [`${sent.body.routerKey}${sent.body.raise ? ' (raise)' : ''}`]
        : [],
    )
    .sort();
}

describe('fan-out', () => {
  it.each<{
    change: string;
    act: (world: World) => Promise<unknown>;
    told: string[];
    listeners: Record<string, string[]>;
  }>([
    {
      change: 'a new service tagged shop: a (its token) and b (all) are told',
      act: (world) =>
        givenService(world, {
          name: 'cart',
          type: 'external',
          resource: 'cart.example.com',
          targetPort: 443,
          tags: ['shop'],
        }),
      told: ['a (raise)', 'b (raise)'],
      listeners: { a: ['cart-listener', 'shop-listener'], b: ['cart-listener', 'shop-listener'], c: [] },
    },
    {
      change: 'a target port change of an external service: its connector is on the hub, no agent told',
      act: (world) => changeService(world, 'shop', { targetPort: 8443 }),
      told: [],
      listeners: { a: ['shop-listener'], b: ['shop-listener'], c: [] },
    },
    {
      change: 'its tags no longer select a: a and b are told (old ∪ new), a drops the listener',
      act: (world) => changeService(world, 'shop', { tags: ['other'] }),
      told: ['a (raise)', 'b (raise)'],
      listeners: { a: [], b: ['shop-listener'], c: [] },
    },
    {
      change: 'deleted: every agent that held it is told, none holds it',
      act: (world) => removeService(world, 'shop'),
      told: ['a (raise)', 'b (raise)'],
      listeners: { a: [], b: [], c: [] },
    },
    {
      change: 'an agent service moved from c to a: the connector leaves c (inline) and a is asked',
      act: async (world) => {
        await givenService(world, { name: 'mv', type: 'agent', resource: 'c', targetPort: 22, tags: [] });
        await world.settle();
        await changeService(world, 'mv', { resource: 'a' });
      },
      // The create told b and c; the move asks a alone (c's connector is removed inline).
      told: ['a', 'b (raise)', 'c (raise)'],
      listeners: { a: ['shop-listener'], b: ['mv-listener', 'shop-listener'], c: [] },
    },
    {
      change: 'an agent service on c: c holds the connector and is asked, with the selected agents',
      act: (world) =>
        givenService(world, { name: 'ssh', type: 'agent', resource: 'c', targetPort: 22, tags: ['shop'] }),
      told: ['a (raise)', 'b (raise)', 'c (raise)'],
      listeners: { a: ['shop-listener', 'ssh-listener'], b: ['shop-listener', 'ssh-listener'], c: [] },
    },
  ])('$change', async ({ act, told, listeners }) => {
    // Prepare
    const world = await newWorld({}, fleet);
    const from = world.sent.length;

    // Act
    await act(world);
    await world.settle();

    // Assess
    const about = world.sent.slice(from).find((sent) => sent.queue === 'service')?.body.name ?? '';
    expect(toldAbout(world, about as string, from)).toEqual(told);
    for (const [agent, names] of Object.entries(listeners)) {
      expect((await bridgesOf(world, agent)).listeners, agent).toEqual(names);
    }
    const connectors = Object.fromEntries(
      await Promise.all(
        ['a', 'c'].map(async (agent) => [agent, Object.keys((await bridgesOf(world, agent)).connectors)]),
      ),
    );
    expect(connectors.c).not.toContain('mv-connector');
    world.dispose();
  });
});

describe('per-site status', () => {
  type Summary = { expected: number; applied: number; pending: number; offline: number };
  const sites = async (world: World, name = 'shop') => {
    const { sites: found } = await world.run(() => getService(name));
    const { notApplied, ...summary } = found!;
    return {
      summary: summary as Summary,
      waiting: (notApplied ?? []).map((site) => `${site.agentUuid}:${site.state}`).sort(),
    };
  };
  const live = (world: World, ...agents: string[]) =>
    world.run(async () => {
      for (const agent of agents) await putAgentStatus(agent, { status: {}, lastActive: Date.now() });
    });
  const acknowledge = (world: World, ...agents: string[]) =>
    world.run(async () => {
      for (const agent of agents) {
        const { lastUpdated } = await getAgentChanges(agent);
        await acknowledgeAgentChanges(agent, { lastUpdated: Number(lastUpdated) });
      }
    });

  it.each<{ given: string; act: (world: World) => Promise<unknown>; summary: Summary; waiting: string[] }>([
    {
      given: 'no agent ever reported: every site offline',
      act: async () => undefined,
      summary: { expected: 3, applied: 0, pending: 0, offline: 3 },
      waiting: ['HUB:offline', 'a:offline', 'b:offline'],
    },
    {
      given: 'the agents report and have not acknowledged: pending',
      act: (world) => live(world, hub, 'a', 'b', 'c'),
      summary: { expected: 3, applied: 0, pending: 3, offline: 0 },
      waiting: ['HUB:pending', 'a:pending', 'b:pending'],
    },
    {
      given: 'a acknowledges: a applied',
      act: async (world) => {
        await live(world, hub, 'a', 'b');
        await acknowledge(world, 'a');
      },
      summary: { expected: 3, applied: 1, pending: 2, offline: 0 },
      waiting: ['HUB:pending', 'b:pending'],
    },
    {
      given: 'every site acknowledges: all applied',
      act: (world) => acknowledge(world, hub, 'a', 'b'),
      summary: { expected: 3, applied: 3, pending: 0, offline: 0 },
      waiting: [],
    },
    {
      given: 'all acknowledged, then the tags change: the agents told are pending again, the hub is not',
      act: async (world) => {
        await live(world, hub, 'a', 'b');
        await acknowledge(world, hub, 'a', 'b');
        await changeService(world, 'shop', { tags: ['shop', 'more'] });
        await world.settle();
      },
      summary: { expected: 3, applied: 1, pending: 2, offline: 0 },
      waiting: ['a:pending', 'b:pending'],
    },
    {
      given: 'a change not reconciled yet: every site waits for it',
      act: async (world) => {
        await live(world, hub, 'a', 'b');
        await acknowledge(world, hub, 'a', 'b');
        await world.settle();
        await changeService(world, 'shop', { targetPort: 9443 });
      },
      summary: { expected: 3, applied: 0, pending: 3, offline: 0 },
      waiting: ['HUB:pending', 'a:pending', 'b:pending'],
    },
  ])('$given', async ({ act, summary, waiting }) => {
    // Prepare
    const world = await newWorld({}, fleet);

    // Act
    await act(world);

    // Assess: d (tagged, no router) and c (untagged) are no sites of shop
    const found = await sites(world);
    expect(found.summary).toEqual(summary);
    expect(found.waiting).toEqual(waiting.map((site) => site.replace('HUB', hub)).sort());
    world.dispose();
  });
});
