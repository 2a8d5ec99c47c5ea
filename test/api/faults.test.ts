import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { armFault, disarmFaults, type FaultPoint } from '../../shared/faults.js';
import { enqueueServiceReconcile } from '../../shared/queue/publishers.js';
import { releaseLock, tryAcquireLock } from '../../shared/store/lock.js';
import { createHub, fabricSettled } from '../fixtures/world.js';
import type { ApiClient } from '../support/client.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';
import { ScriptedAgent } from '../support/scripted-agent.js';

type Service = {
  name: string;
  provisioningStatus: string;
  provisioningError: string | null;
  bridgePort: number;
  targetPort: number;
};
type RouterConfig = {
  bridges?: { tcpListeners?: Record<string, { port: string }>; tcpConnectors?: Record<string, unknown> };
};

const MAX_RECEIVES = 3;
const poll = { timeout: 90_000, interval: 100 };
let t: TestRuntime;
let api: ApiClient;
let hub: string;
let watcher: string;

const service = async (name: string) => (await api.get<Service>(`/api/v3/services/${name}`)).body;
const hubConfig = async () => (await api.get<RouterConfig>('/api/v3/router/hub-config')).body;
const watcherConfig = async () =>
  (await api.get<RouterConfig>(`/api/v3/iofog/${watcher}/router-config`)).body;

/** Everything the user can see of a converged service: status, hub listener, hub connector, agent listener. */
async function convergedView(name: string) {
  const row = await service(name);
  const hubDocument = await hubConfig();
  return {
    status: row.provisioningStatus,
    hubListener: hubDocument.bridges?.tcpListeners?.[`${name}-listener`]?.port ?? null,
    hubConnector: hubDocument.bridges?.tcpConnectors?.[`${name}-connector`] ?? null,
    agentListener: (await watcherConfig()).bridges?.tcpListeners?.[`${name}-listener`]?.port ?? null,
  };
}

async function goneEverywhere(name: string) {
  const hubDocument = await hubConfig();
  return {
    status: (await api.get(`/api/v3/services/${name}`)).status,
    hubListener: hubDocument.bridges?.tcpListeners?.[`${name}-listener`] ?? null,
    hubConnector: hubDocument.bridges?.tcpConnectors?.[`${name}-connector`] ?? null,
    agentListener: (await watcherConfig()).bridges?.tcpListeners?.[`${name}-listener`] ?? null,
  };
}

async function createExternal(name: string, targetPort = 443): Promise<Service> {
  const response = await api.post<Service>('/api/v3/services', {
    name,
    type: 'external',
    resource: `${name}.example.com`,
    targetPort,
  });
  expect(response.status).toBe(201);
  return response.body;
}

const expectConverged = async (name: string, bridgePort: number) =>
  expect
    .poll(() => convergedView(name), poll)
    .toEqual({
      status: 'ready',
      hubListener: String(bridgePort),
      hubConnector: expect.objectContaining({ name: `${name}-connector`, host: `${name}.example.com` }),
      agentListener: String(bridgePort),
    });

beforeAll(async () => {
  t = await startTestRuntime({
    visibilityTimeoutSeconds: 1,
    // The sweeper must not rescue a lost message here: every convergence below is the message's own.
    env: { MAX_RECEIVE_COUNT: String(MAX_RECEIVES), HUB_LOCK_LEASE_MS: '1500', PENDING_GRACE_MS: '600000' },
  });
  api = t.api;
  hub = await createHub(api);
  watcher = (
    await api.post<{ uuid: string }>('/api/v3/iofog', {
      name: 'watcher',
      host: '10.0.0.2',
      tags: ['service.iofog.org/tag: all'],
    })
  ).body.uuid;
});

afterEach(() => {
  disarmFaults();
});

afterAll(async () => {
  await t?.stop();
});

const crashPoints: FaultPoint[] = [
  'service:start',
  'service:after-hub-write',
  'service:after-fan-out',
  'service:before-status-write',
];

describe('a selected listener change interrupted before its fan-out', () => {
  it('still tells the agent whose tags select it, as Edgelet sees it, when the worker dies after the hub write (twice)', async () => {
    // Prepare: the watcher (tagged all), provisioned as Edgelet, with every change so far acknowledged
    await fabricSettled(api);
    const key = await api.get<{ key: string }>(`/api/v3/iofog/${watcher}/provisioning-key`);
    const agent = new ScriptedAgent(t.runtime.url);
    await agent.provision(key.body.key, 1);
    await agent.poll();
    expect((await agent.changes()).flags.microserviceConfig).toBe(false);
    armFault('service:after-hub-write', MAX_RECEIVES - 1, undefined, 'told-after-crash');

    // Act: the sets are written before each crash, so only the retry that survives tells the agent
    const created = await createExternal('told-after-crash');

    // Assess
    await expectConverged(created.name, created.bridgePort);
    await expect.poll(async () => (await agent.changes()).flags.microserviceConfig, poll).toBe(true);
    const { routerConfig } = await agent.poll();
    expect(Object.keys((routerConfig as RouterConfig | undefined)?.bridges?.tcpListeners ?? {})).toEqual([
      'told-after-crash-listener',
    ]);
  });
});

describe('a service worker dying part-way through a reconcile', () => {
  it.each(crashPoints)('converges a create when the worker dies at %s (twice)', async (point) => {
    // Prepare
    const name = `create-${point.replace(/[^a-z]/g, '')}`;
    armFault(point, MAX_RECEIVES - 1, undefined, name);

    // Act
    const created = await createExternal(name);

    // Assess
    await expectConverged(created.name, created.bridgePort);
  });

  it.each(crashPoints)('converges a delete when the worker dies at %s (twice)', async (point) => {
    // Prepare
    const created = await createExternal(`delete-${point.replace(/[^a-z]/g, '')}`);
    await expectConverged(created.name, created.bridgePort);
    armFault(point, MAX_RECEIVES - 1, undefined, created.name);

    // Act
    expect((await api.delete(`/api/v3/services/${created.name}`)).status).toBe(204);

    // Assess
    await expect
      .poll(() => goneEverywhere(created.name), poll)
      .toEqual({ status: 404, hubListener: null, hubConnector: null, agentListener: null });
  });

  it('converges when a fog worker dies before writing an agent router config (twice)', async () => {
    // Prepare
    armFault('router:before-write', 2);

    // Act
    const created = await createExternal('fog-crash');

    // Assess
    await expectConverged(created.name, created.bridgePort);
  });
});

describe('contention and stuck dependencies', () => {
  it('converges through a storm of lost conditional writes on router configs', async () => {
    // Prepare: more lost races than one reconcile attempt tolerates (20), so messages are retried too
    armFault('store:router-config-conflict', 45);

    // Act
    const created = await createExternal('storm');

    // Assess
    await expectConverged(created.name, created.bridgePort);
  });

  it('converges after a hub lock holder that never releases loses its lease', async () => {
    // Prepare: someone takes the hub lock and dies holding it
    const stuck = await t.inRuntime(() => tryAcquireLock(`hub:${hub}`, 'crashed-worker', 1500));
    expect(stuck).toBeDefined();

    // Act
    const created = await createExternal('after-stuck-lock');

    // Assess
    await expectConverged(created.name, created.bridgePort);
    // The dead holder's late release must not free the lock of whoever holds it now
    await t.inRuntime(() => releaseLock(stuck!));
    const next = await t.inRuntime(() => tryAcquireLock(`hub:${hub}`, 'observer', 1500));
    if (next) {
      expect(next.fencingToken).toBeGreaterThan(stuck!.fencingToken);
      await t.inRuntime(() => releaseLock(next));
    }
  });
});

describe('poison messages, duplicates and reordering', () => {
  it('moves a message that always fails to the DLQ, marks the service failed with the error, and recovers on reconcile', async () => {
    // Prepare
    armFault('service:start', MAX_RECEIVES, undefined, 'poison');

    // Act
    const created = await createExternal('poison');

    // Assess
    await expect
      .poll(async () => {
        const row = await service('poison');
        return { status: row.provisioningStatus, error: row.provisioningError };
      }, poll)
      .toEqual({ status: 'failed', error: 'Reconcile failed repeatedly: injected fault at service:start' });
    const sqs = new SQSClient({
      region: 'us-east-1',
      endpoint: t.runtime.sqsEndpoint,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      useQueueUrlAsEndpoint: false,
    });
    await expect
      .poll(async () => {
        const { Attributes } = await sqs.send(
          new GetQueueAttributesCommand({
            QueueUrl: t.runtime.queues.serviceDlq,
            AttributeNames: ['ApproximateNumberOfMessages'],
          }),
        );
        return Number(Attributes?.ApproximateNumberOfMessages);
      }, poll)
      .toBe(1);

    // Act: the operator retries once the cause is gone
    expect((await api.post('/api/v3/services/poison/reconcile', {})).status).toBe(202);

    // Assess
    await expectConverged('poison', created.bridgePort);
  });

  it('reconciles a name created again after its deletion finished (no message taken for a duplicate)', async () => {
    // Prepare: create, delete, and wait until the deletion is complete everywhere
    const first = await createExternal('reborn', 2001);
    await expectConverged('reborn', first.bridgePort);
    expect((await api.delete('/api/v3/services/reborn')).status).toBe(204);
    await expect
      .poll(() => goneEverywhere('reborn'), poll)
      .toEqual({ status: 404, hubListener: null, hubConnector: null, agentListener: null });

    // Act: the same name again, starting over at generation 1
    const second = await createExternal('reborn', 2002);

    // Assess
    await expectConverged('reborn', second.bridgePort);
    expect((await hubConfig()).bridges?.tcpConnectors?.['reborn-connector']).toMatchObject({ port: '2002' });
  });

  it('ends at the last update whatever duplicated or stale messages arrive', async () => {
    // Prepare
    const created = await createExternal('reordered', 1001);
    await expectConverged('reordered', created.bridgePort);

    // Act: two quick updates, then duplicates of every generation and a stale one replayed last
    expect((await api.patch('/api/v3/services/reordered', { targetPort: 1002 })).status).toBe(204);
    expect((await api.patch('/api/v3/services/reordered', { targetPort: 1003 })).status).toBe(204);
    for (const generation of [3, 2, 3, 1, 2, 1]) {
      await t.inRuntime(() =>
        enqueueServiceReconcile({ name: 'reordered', generation }, `replay-${generation}-${Math.random()}`),
      );
    }

    // Assess
    await expectConverged('reordered', created.bridgePort);
    await expect
      .poll(async () => (await hubConfig()).bridges?.tcpConnectors?.['reordered-connector'], poll)
      .toEqual({
        name: 'reordered-connector',
        host: 'reordered.example.com',
        port: '1003',
        address: 'reordered',
        processId: 'reordered.example.com-external-1003',
      });
    expect((await service('reordered')).targetPort).toBe(1003);
  });
});
