import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchWriteCommand,
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
} from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { sweep } from '../../shared/reconcile/sweeper.js';
import { createAgent, createHub, fabricSettled } from '../fixtures/world.js';
import { type ApiClient, eventually } from '../support/client.js';
import { routersQuiescent } from '../support/quiescent.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';
import { ScriptedAgent } from '../support/scripted-agent.js';

/**
 * Drift repair does not wait for a message: a router config changed behind fogbridge's back (a listener
 * removed, a stale one added, straight in the table) is found by the periodic sweep, which recomputes a
 * rotating window of routers from the store (and checks a rotating window of services' distribution
 * sets), and re-converged.
 */

type Bridges = {
  bridges?: { tcpListeners?: Record<string, unknown>; tcpConnectors?: Record<string, unknown> };
};

const TAG = 'service.iofog.org/tag: drift';
let t: TestRuntime | undefined;

afterEach(async () => {
  await t?.stop();
  t = undefined;
});

/** The table as an operator with console access would edit it. */
function tableOf(runtime: TestRuntime) {
  return DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: runtime.runtime.dynamodbEndpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    }),
  );
}

/**
 * Edits a router's stored entries: adds a stale `ghost-listener` and, when `remove` is named, deletes
 * that service's listener entry (the hub's listeners are stored under the hub).
 */
async function damageRouterConfig(runtime: TestRuntime, routerKey: string, remove?: string): Promise<void> {
  if (remove) await removeListenerEntry(runtime, routerKey, remove);
  await addGhostListener(runtime, routerKey);
}

/** Deletes a service's listener entry stored under a router. */
async function removeListenerEntry(runtime: TestRuntime, routerKey: string, service: string): Promise<void> {
  const table = tableOf(runtime);
  const key = { PK: `ROUTERCFG#${routerKey}`, SK: `ENTRY#tcpListeners#${service}-listener` };
  const { Item } = await table.send(
    new GetCommand({ TableName: 'fogbridge', Key: key, ConsistentRead: true }),
  );
  expect(Item?.entry).toEqual(expect.objectContaining({ name: `${service}-listener` }));
  await table.send(new DeleteCommand({ TableName: 'fogbridge', Key: key }));
  table.destroy();
}

/** Stores a listener no service owns under a router. */
async function addGhostListener(runtime: TestRuntime, routerKey: string): Promise<void> {
  const table = tableOf(runtime);
  await table.send(
    new PutCommand({
      TableName: 'fogbridge',
      Item: {
        PK: `ROUTERCFG#${routerKey}`,
        SK: 'ENTRY#tcpListeners#ghost-listener',
        routerKey,
        entry: { name: 'ghost-listener', port: '10999', address: 'ghost' },
      },
    }),
  );
  table.destroy();
}

/**
 * Deletes a service's entry from a distribution set: the listener every agent whose tags select the
 * token holds is stored there once, so every one of them loses it.
 */
async function damageDistributionSet(runtime: TestRuntime, token: string, service: string): Promise<void> {
  const table = tableOf(runtime);
  const key = { PK: `TOKEN#${token}`, SK: `SVC#${service}` };
  const { Item } = await table.send(
    new GetCommand({ TableName: 'fogbridge', Key: key, ConsistentRead: true }),
  );
  expect(Item?.listener).toEqual(expect.objectContaining({ name: `${service}-listener` }));
  await table.send(new DeleteCommand({ TableName: 'fogbridge', Key: key }));
  table.destroy();
}

const listenersOf = async (api: ApiClient, uuid: string) =>
  Object.keys(
    (await api.get<Bridges>(`/api/v3/iofog/${uuid}/router-config`)).body.bridges?.tcpListeners ?? {},
  ).sort();

/** Three tagged agents and two services they all select, converged. */
async function driftWorld(api: ApiClient) {
  const hub = await createHub(api);
  const agents = [];
  for (const name of ['drift-1', 'drift-2', 'drift-3'])
    agents.push(await createAgent(api, { name, host: `10.9.0.${agents.length + 1}`, tags: [TAG] }));
  for (const name of ['alpha', 'beta'])
    expect(
      (
        await api.post('/api/v3/services', {
          name,
          type: 'external',
          resource: `${name}.example.com`,
          targetPort: 80,
          tags: ['drift'],
        })
      ).status,
    ).toBe(201);
  for (const uuid of [hub, ...agents])
    await eventually(
      async () =>
        (await listenersOf(api, uuid)).join() === 'alpha-listener,beta-listener' ? true : undefined,
      `router ${uuid} to hold both listeners`,
    );
  return { hub, agents };
}

describe('the periodic sweep repairs a router config damaged in the store', () => {
  it('within ⌈agents / DRIFT_CHECK_ROUTERS⌉ sweeps: one router per sweep, three agents, three sweeps', async () => {
    // Prepare: the sweep timer is off; the test runs sweeps itself, one router per sweep
    t = await startTestRuntime({ sweepIntervalMs: 3_600_000, env: { DRIFT_CHECK_ROUTERS: '1' } });
    const { hub, agents } = await driftWorld(t.api);
    await routersQuiescent(t, [hub, ...agents]);
    for (const uuid of agents) await damageRouterConfig(t, uuid);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const damaged = await Promise.all(agents.map((uuid) => listenersOf(t!.api, uuid)));

    // Act
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await t.inRuntime(() => sweep({ full: false })));

    // Assess: nothing but the sweeps repaired them, each sweep found one, and all three are whole again
    expect(damaged).toEqual(agents.map(() => ['alpha-listener', 'beta-listener', 'ghost-listener']));
    expect(results.map((result) => result.drifted)).toEqual([1, 1, 1]);
    for (const uuid of agents)
      await eventually(
        async () =>
          (await listenersOf(t!.api, uuid)).join() === 'alpha-listener,beta-listener' ? true : undefined,
        `router ${uuid} to be repaired`,
      );
    expect((await t.inRuntime(() => sweep({ full: false }))).drifted).toBe(0);
  }, 120_000);

  it('a listener lost from a distribution set comes back on every agent selecting it within ⌈services / DRIFT_CHECK_ROUTERS⌉ sweeps', async () => {
    // Prepare: two services, one checked per sweep
    t = await startTestRuntime({ sweepIntervalMs: 3_600_000, env: { DRIFT_CHECK_ROUTERS: '1' } });
    const { hub, agents } = await driftWorld(t.api);
    await routersQuiescent(t, [hub, ...agents]);
    await damageDistributionSet(t, 'drift', 'alpha');
    const damaged = await Promise.all(agents.map((uuid) => listenersOf(t!.api, uuid)));

    // Act
    const results = [];
    for (let i = 0; i < 2; i++) results.push(await t.inRuntime(() => sweep({ full: false })));

    // Assess: one of the two sweeps found alpha; every agent holds it again; the hub never lost it
    expect(damaged).toEqual(agents.map(() => ['beta-listener']));
    expect(results.map((result) => result.driftedServices).sort()).toEqual([0, 1]);
    for (const uuid of agents)
      await eventually(
        async () =>
          (await listenersOf(t!.api, uuid)).join() === 'alpha-listener,beta-listener' ? true : undefined,
        `router ${uuid} to hold alpha-listener again`,
      );
    expect(await listenersOf(t.api, hub)).toEqual(['alpha-listener', 'beta-listener']);
    const after = await Promise.all([0, 1].map(() => t!.inRuntime(() => sweep({ full: false }))));
    expect(after.map((result) => result.driftedServices)).toEqual([0, 0]);
  }, 120_000);

  it("the hub's entries are checked in windows: a lost one within ⌈services / DRIFT_CHECK_ROUTERS⌉ sweeps, a stray one within ⌈entries / (2 × DRIFT_CHECK_ROUTERS)⌉", async () => {
    // Prepare: the sweep timer is off; each sweep checks one service's entries on the hub and two of the
    // entries the hub holds (alpha's and beta's listener and connector). Beta's listener is lost.
    t = await startTestRuntime({ sweepIntervalMs: 3_600_000, env: { DRIFT_CHECK_ROUTERS: '1' } });
    const { hub, agents } = await driftWorld(t.api);
    await routersQuiescent(t, [hub, ...agents]);
    await removeListenerEntry(t, hub, 'beta');

    // Act: two sweeps (alpha's turn, then beta's); once the hub is repaired, a stray listener is added
    // and three sweeps run (five entries, two a sweep)
    const lost = [];
    for (let i = 0; i < 2; i++) lost.push((await t.inRuntime(() => sweep({ full: false }))).drifted);
    await eventually(
      async () =>
        (await listenersOf(t!.api, hub)).join() === 'alpha-listener,beta-listener' ? true : undefined,
      'the hub to hold beta-listener again',
    );
    await routersQuiescent(t, [hub]);
    await addGhostListener(t, hub);
    const stray = [];
    for (let i = 0; i < 3; i++) stray.push((await t.inRuntime(() => sweep({ full: false }))).drifted);

    // Assess: alpha's sweep found nothing, beta's found the hub; exactly one of the next three found the
    // stray listener, which the hub no longer holds
    expect(lost).toEqual([0, 1]);
    expect([...stray].sort()).toEqual([0, 0, 1]);
    await eventually(
      async () =>
        (await listenersOf(t!.api, hub)).join() === 'alpha-listener,beta-listener' ? true : undefined,
      'the hub to drop ghost-listener',
    );
    expect((await t.inRuntime(() => sweep({ full: false }))).drifted).toBe(0);
  }, 120_000);

  it('the sweep timer repairs the hub with no request sent', async () => {
    // Prepare
    t = await startTestRuntime({ sweepIntervalMs: 1_000, env: { DRIFT_CHECK_ROUTERS: '1' } });
    const { hub } = await driftWorld(t.api);

    // Act
    await damageRouterConfig(t, hub, 'beta');

    // Assess
    await eventually(
      async () =>
        (await listenersOf(t!.api, hub)).join() === 'alpha-listener,beta-listener' ? true : undefined,
      'the hub to be repaired by the sweep timer',
    );
    const hubConfig = (await t.api.get<Bridges>('/api/v3/router/hub-config')).body;
    expect(Object.keys(hubConfig.bridges?.tcpListeners ?? {}).sort()).toEqual([
      'alpha-listener',
      'beta-listener',
    ]);
  }, 120_000);
});

describe('the periodic sweep releases bridge ports whose owner is gone', () => {
  it('a window of 1,000 claims per sweep: 1,100 orphaned claims are all free after two sweeps, the live one kept, the lowest freed port handed to the next create', async () => {
    // Prepare: no sweep timer; claims count as settled after one second. One live service, then 1,100
    // claims on the ports above its own whose owners never had a row (creates that crashed after
    // claiming), written straight into the table an hour old.
    t = await startTestRuntime({ sweepIntervalMs: 3_600_000, env: { PENDING_GRACE_MS: '1000' } });
    await createHub(t.api);
    const keeper = await t.api.post<{ bridgePort: number }>('/api/v3/services', {
      name: 'keeper',
      type: 'external',
      resource: 'keeper.example.com',
      targetPort: 80,
    });
    expect(keeper.status).toBe(201);
    const kept = keeper.body.bridgePort;
    const claimedAt = new Date(Date.now() - 3_600_000).toISOString();
    const orphans = Array.from({ length: 1_100 }, (_, i) => ({
      PK: 'PORTS',
      SK: `PORT#${String(kept + 1 + i).padStart(5, '0')}`,
      port: kept + 1 + i,
      owner: `crashed-${i}#1`,
      claimedAt,
    }));
    const table = tableOf(t);
    for (let i = 0; i < orphans.length; i += 25)
      await table.send(
        new BatchWriteCommand({
          RequestItems: { fogbridge: orphans.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) },
        }),
      );
    table.destroy();
    await new Promise((resolve) => setTimeout(resolve, 1_100));

    // Act
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await t.inRuntime(() => sweep({ full: false })));
    const next = await t.api.post<{ bridgePort: number }>('/api/v3/services', {
      name: 'next',
      type: 'external',
      resource: 'next.example.com',
      targetPort: 80,
    });

    // Assess: the first window holds the live claim and 999 orphans, the second the other 101, the
    // third (from the start again) none; the live service keeps its port; the next create gets the
    // lowest freed one
    expect(results.map((result) => result.releasedPorts)).toEqual([999, 101, 0]);
    expect((await t.api.get<{ bridgePort: number }>('/api/v3/services/keeper')).body.bridgePort).toBe(kept);
    expect(next.status).toBe(201);
    expect(next.body.bridgePort).toBe(kept + 1);
  }, 120_000);
});

describe("an agent's entry in the distribution-token index", () => {
  it("deleted in the store, is written again by the agent's next reconcile: the agent is told of the next service its tags select", async () => {
    // Prepare: no sweeps; a provisioned agent tagged "drift" whose index entry is then deleted
    t = await startTestRuntime({ sweepIntervalMs: 3_600_000 });
    const hub = await createHub(t.api);
    const uuid = await createAgent(t.api, { name: 'drift-told', host: '10.9.0.9', tags: [TAG] });
    await fabricSettled(t.api);
    const key = await t.api.get<{ key: string }>(`/api/v3/iofog/${uuid}/provisioning-key`);
    const agent = new ScriptedAgent(t.runtime.url);
    await agent.provision(key.body.key, 1);
    await agent.poll();
    const table = tableOf(t);
    const entry = { PK: 'AGTOKEN#drift', SK: `AGENT#${uuid}` };
    const { Item } = await table.send(
      new GetCommand({ TableName: 'fogbridge', Key: entry, ConsistentRead: true }),
    );
    expect(Item).toEqual(expect.objectContaining({ uuid, token: 'drift' }));
    await table.send(new DeleteCommand({ TableName: 'fogbridge', Key: entry }));

    // Act: the agent changes (its description), then a service it selects is created
    expect((await t.api.patch(`/api/v3/iofog/${uuid}`, { description: 'changed' })).status).toBe(204);
    await routersQuiescent(t, [hub, uuid]);
    const restored = await table.send(
      new GetCommand({ TableName: 'fogbridge', Key: entry, ConsistentRead: true }),
    );
    table.destroy();
    expect((await agent.changes()).flags.microserviceConfig).toBe(false);
    const created = await t.api.post('/api/v3/services', {
      name: 'gamma',
      type: 'external',
      resource: 'gamma.example.com',
      targetPort: 80,
      tags: ['drift'],
    });

    // Assess: the entry is back, and the fan-out reached the agent
    expect(restored.Item).toEqual(expect.objectContaining({ uuid, token: 'drift' }));
    expect(created.status).toBe(201);
    await expect
      .poll(async () => (await agent.changes()).flags.microserviceConfig, { timeout: 60_000, interval: 100 })
      .toBe(true);
    const { routerConfig } = await agent.poll();
    expect(Object.keys((routerConfig?.bridges as Bridges['bridges'])?.tcpListeners ?? {})).toEqual([
      'gamma-listener',
    ]);
  }, 120_000);
});

describe('POST /api/v3/iofog/{uuid}/reconcile', () => {
  it("202, and the agent's damaged router is re-converged", async () => {
    // Prepare: no sweeps, so only the request can repair it
    t = await startTestRuntime({ sweepIntervalMs: 3_600_000 });
    const { hub, agents } = await driftWorld(t.api);
    await routersQuiescent(t, [hub, ...agents]);
    await damageRouterConfig(t, agents[0]!);

    // Act
    const response = await t.api.post(`/api/v3/iofog/${agents[0]}/reconcile`, undefined);

    // Assess
    expect({ status: response.status, body: response.body }).toEqual({
      status: 202,
      body: { uuid: agents[0], reconcile: 'requested' },
    });
    await eventually(
      async () =>
        (await listenersOf(t!.api, agents[0]!)).join() === 'alpha-listener,beta-listener' ? true : undefined,
      'the router to be repaired',
    );
  }, 120_000);

  it('404 for an agent that does not exist', async () => {
    // Prepare
    t = await startTestRuntime({ sweepIntervalMs: 3_600_000 });

    // Act
    const response = await t.api.post('/api/v3/iofog/nobody/reconcile', undefined);

    // Assess
    expect({ status: response.status, body: response.body }).toEqual({
      status: 404,
      body: { name: 'NotFoundError', message: 'Agent with uuid nobody not found' },
    });
  });
});
