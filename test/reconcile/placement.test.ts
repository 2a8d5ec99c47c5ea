import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bridgesOf, givenAgent, givenApplication, givenMicroservice, givenService } from './fleet.js';
import { newWorld, stopStore, type World } from './harness.js';

/**
 * Where a service's router objects go, run through the service and fog reconcilers against the store:
 * the seed's connector host and processId tables, the distribution table (plant-a, plant-b, plant-c)
 * and the defaultBridge rule. Given the fleet below, when a service is created and every reconcile it
 * starts has run, then each router holds exactly these bridges.
 */

let fleet: World;
const uuids: Record<string, string> = {};
const MS_WEB = '11111111-1111-4111-8111-000000000001';
const MS_HOSTNET = '11111111-1111-4111-8111-000000000002';
const MS_INNER = '11111111-1111-4111-8111-000000000003';
const MS_BELOW = '11111111-1111-4111-8111-000000000004';

beforeAll(async () => {
  fleet = await newWorld();
  uuids.hub = await givenAgent(fleet, { name: 'hub', host: 'hub.example.com' });
  for (const [name, body] of Object.entries({
    'fog-e': { host: '10.0.0.5' },
    'fog-i': { host: '10.0.0.6', routerMode: 'interior' },
    'plant-a': { host: '10.0.1.1', tags: ['service.iofog.org/tag: checkout'] },
    'plant-b': { host: '10.0.1.2', tags: ['service.iofog.org/tag: all'] },
    'plant-c': { host: '10.0.1.3', tags: ['checkout'] },
    'fog-ie': { host: '10.0.0.8', upstreamRouters: ['fog-i'] },
  })) {
    uuids[name] = await givenAgent(fleet, { uuid: name, name, natsMode: 'none', ...body });
  }
  await givenApplication(fleet, 'orders');
  await givenMicroservice(fleet, { uuid: MS_WEB, name: 'web', application: 'orders', agentName: 'fog-e' });
  await givenMicroservice(fleet, {
    uuid: MS_HOSTNET,
    name: 'hostnet',
    application: 'orders',
    agentName: 'fog-e',
    hostNetworkMode: true,
  });
  await givenMicroservice(fleet, {
    uuid: MS_INNER,
    name: 'inner',
    application: 'orders',
    agentName: 'fog-i',
  });
  await givenMicroservice(fleet, {
    uuid: MS_BELOW,
    name: 'below',
    application: 'orders',
    agentName: 'fog-ie',
  });
  await fleet.settle();
}, 120_000);

afterAll(async () => {
  fleet?.dispose();
  await stopStore();
});

type Connector = { host: string; port: string; processId: string };
interface PlacementCase {
  title: string;
  service: Record<string, unknown>;
  /** The connector, and the router that holds it. */
  connector: { on: string; is: Connector };
  /** Routers holding the service's listener, besides its bridge. */
  listeners?: string[];
  /** The router its hub listener is on, when not the hub (its defaultBridge). */
  bridge?: string;
}

const service = (overrides: Record<string, unknown>) => ({
  name: 'svc',
  targetPort: 8080,
  defaultBridge: 'default-router',
  tags: ['checkout'],
  ...overrides,
});

const cases: PlacementCase[] = [
  {
    title: 'microservice on an edge router, not on the host network: {application}.{microservice}',
    service: service({ type: 'microservice', resource: 'orders/web' }),
    connector: { on: 'fog-e', is: { host: 'orders.web', port: '8080', processId: MS_WEB } },
  },
  {
    title: 'microservice on an edge router, on the host network: edgelet.default.svc.bridge.local',
    service: service({ type: 'microservice', resource: 'orders/hostnet' }),
    connector: {
      on: 'fog-e',
      is: { host: 'edgelet.default.svc.bridge.local', port: '8080', processId: MS_HOSTNET },
    },
  },
  {
    title: 'microservice on an interior router: 127.0.0.1',
    service: service({ type: 'microservice', resource: 'orders/inner' }),
    connector: { on: 'fog-i', is: { host: '127.0.0.1', port: '8080', processId: MS_INNER } },
  },
  {
    title: 'agent with an edge router: edgelet.default.svc.bridge.local, {agent}-local-{port}',
    service: service({ type: 'agent', resource: 'fog-e', targetPort: 22 }),
    connector: {
      on: 'fog-e',
      is: { host: 'edgelet.default.svc.bridge.local', port: '22', processId: 'fog-e-local-22' },
    },
  },
  {
    title: 'agent with an interior router: 127.0.0.1',
    service: service({ type: 'agent', resource: 'fog-i', targetPort: 22 }),
    connector: { on: 'fog-i', is: { host: '127.0.0.1', port: '22', processId: 'fog-i-local-22' } },
  },
  {
    title: 'external: the resource, on the default router, {resource}-external-{port}',
    service: service({ type: 'external', resource: '203.0.113.10', targetPort: 443 }),
    connector: {
      on: 'hub',
      is: { host: '203.0.113.10', port: '443', processId: '203.0.113.10-external-443' },
    },
  },
  {
    title: 'distribution: checkout selects plant-a (its token) and plant-b (all), not plant-c',
    service: service({ type: 'external', resource: 'shop.example.com', targetPort: 443 }),
    connector: {
      on: 'hub',
      is: { host: 'shop.example.com', port: '443', processId: 'shop.example.com-external-443' },
    },
    listeners: ['plant-a', 'plant-b'],
  },
  {
    title: 'distribution: a service without tags reaches only plant-b (all)',
    service: service({ type: 'external', resource: 'bare.example.com', targetPort: 443, tags: [] }),
    connector: {
      on: 'hub',
      is: { host: 'bare.example.com', port: '443', processId: 'bare.example.com-external-443' },
    },
    listeners: ['plant-b'],
  },
  {
    title: 'distribution: a Kubernetes annotation tag (with ":") is no token',
    service: service({
      type: 'external',
      resource: 'annotated.example.com',
      targetPort: 443,
      tags: ['checkout: yes'],
    }),
    connector: {
      on: 'hub',
      is: { host: 'annotated.example.com', port: '443', processId: 'annotated.example.com-external-443' },
    },
    listeners: ['plant-b'],
  },
  {
    title: 'defaultBridge an interior upstream of the backend: the listener on it, not on the hub',
    service: service({ type: 'microservice', resource: 'orders/below', defaultBridge: 'fog-i' }),
    connector: { on: 'fog-ie', is: { host: 'orders.below', port: '8080', processId: MS_BELOW } },
    bridge: 'fog-i',
  },
];

describe('placement, from the seed tables', () => {
  it.each(cases)('$title', async ({ service: body, connector, listeners, bridge }) => {
    // Prepare
    const world = await newWorld({}, fleet);

    // Act
    const created = await givenService(world, body);
    await world.settle();

    // Assess: the hub holds the listener; the connector is on its router alone; the selected agents
    // hold the listener, no other agent does
    const name = 'svc';
    const routers = ['hub', 'fog-e', 'fog-i', 'fog-ie', 'plant-a', 'plant-b', 'plant-c'];
    const held = Object.fromEntries(
      await Promise.all(
        routers.map(async (router) => [router, await bridgesOf(world, uuids[router]!)] as const),
      ),
    );
    const wantListeners = new Set([bridge ?? 'hub', ...(listeners ?? ['plant-a', 'plant-b'])]);
    for (const router of routers) {
      expect(held[router]!.listeners, router).toEqual(wantListeners.has(router) ? [`${name}-listener`] : []);
      expect(held[router]!.connectors, router).toEqual(
        router === connector.on ? { [`${name}-connector`]: connector.is } : {},
      );
    }
    expect(created.bridgePort).toBe(10024);
    world.dispose();
  });

  it.each<{ title: string; body: Record<string, unknown>; message: string }>([
    {
      title: 'defaultBridge a router the backend is not linked to',
      body: service({ type: 'microservice', resource: 'orders/web', defaultBridge: 'fog-i' }),
      message:
        'Field \'defaultBridge\': "fog-i" is not an upstream router of agent "fog-e" (upstreams: default-router)',
    },
    {
      title: 'type k8s on a remote control plane',
      body: service({ type: 'k8s', resource: 'payments.svc.cluster.local' }),
      message:
        'Field \'type\' is "k8s", which is allowed only when the control plane is Kubernetes (CONTROL_PLANE=kubernetes)',
    },
  ])('$title: refused, nothing asked of any reconciler', async ({ body, message }) => {
    // Prepare
    const world = await newWorld({}, fleet);

    // Act
    const refused = await givenService(world, body).catch((error: Error) => error.message);

    // Assess
    expect(refused).toBe(message);
    expect(world.queued()).toEqual([]);
    world.dispose();
  });

  it('a microservice or agent service names a router-less agent: refused, nothing placed', async () => {
    // Prepare
    const world = await newWorld({}, fleet);
    await givenAgent(world, { uuid: 'fog-n', name: 'fog-n', routerMode: 'none', natsMode: 'none' });

    // Act
    const refused = await givenService(world, service({ type: 'agent', resource: 'fog-n' })).catch(
      (error: Error) => error.message,
    );

    // Assess
    expect(refused).toBe(
      'Field \'resource\': agent "fog-n", whose router mode is none; a TCP bridge service requires a router on the agent',
    );
    expect(world.queued().filter((sent) => sent.queue === 'service')).toEqual([]);
    world.dispose();
  });
});
