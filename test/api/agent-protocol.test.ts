import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkoutListener } from '../fixtures/seed-000.js';
import { createHub } from '../fixtures/world.js';
import type { ApiClient } from '../support/client.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';
import { ScriptedAgent } from '../support/scripted-agent.js';

const poll = { timeout: 60_000, interval: 100 };
let t: TestRuntime;
let api: ApiClient;
let agent: ScriptedAgent;

beforeAll(async () => {
  t = await startTestRuntime();
  api = t.api;
  await createHub(api);
  const created = await api.post<{ uuid: string }>('/api/v3/iofog', {
    name: 'edge-checkout',
    host: '10.0.0.5',
    tags: ['service.iofog.org/tag: checkout'],
  });
  const key = await api.get<{ key: string; expirationTime: number }>(
    `/api/v3/iofog/${created.body.uuid}/provisioning-key`,
  );
  agent = new ScriptedAgent(t.runtime.url);
  const provisioned = await agent.provision(key.body.key);
  expect(provisioned.status).toBe(200);
  expect(provisioned.body.uuid).toBe(created.body.uuid);
  // Start from a clean slate, as an Edgelet does after its first full pull.
  await agent.poll();
});

afterAll(async () => {
  await t?.stop();
});

describe('an Edgelet pulling its router config through the agent API', () => {
  it('answers every reference change flag, all false when nothing changed', async () => {
    // Act
    const changes = await agent.changes();

    // Assess
    expect(changes).toEqual({
      config: false,
      version: false,
      reboot: false,
      deleteNode: false,
      microserviceList: false,
      microserviceConfig: false,
      registries: false,
      tunnel: false,
      diagnostics: false,
      isImageSnapshot: false,
      prune: false,
      routerChanged: false,
      linkedEdgeResources: false,
      volumeMounts: false,
      execSessions: false,
      microserviceLogs: false,
      fogLogs: false,
      lastUpdated: changes.lastUpdated,
    });
  });

  it('raises microserviceConfig when a checkout service is created, and the pulled config holds checkout-listener', async () => {
    // Act
    const created = await api.post('/api/v3/services', {
      name: 'checkout',
      type: 'external',
      resource: 'checkout.example.com',
      targetPort: 8080,
      tags: ['checkout'],
    });

    // Assess
    expect(created.status).toBe(201);
    await expect.poll(async () => (await agent.changes()).microserviceConfig, poll).toBe(true);
    const { routerConfig } = await agent.poll();
    expect(routerConfig).toEqual({ bridges: { tcpListeners: { 'checkout-listener': checkoutListener } } });
    expect((await agent.changes()).microserviceConfig).toBe(false);
  });

  it('raises the flag again on delete, and the listener is gone from the pulled config', async () => {
    // Act
    expect((await api.delete('/api/v3/services/checkout')).status).toBe(204);

    // Assess
    await expect.poll(async () => (await agent.changes()).microserviceConfig, poll).toBe(true);
    const { routerConfig } = await agent.poll();
    expect(routerConfig).toEqual({ bridges: { tcpListeners: {} } });
  });

  it('never acknowledges away a change written after the agent read the flags', async () => {
    // Prepare: the agent reads the flags ...
    const seen = await agent.changes();

    // Act: ... a change lands before it acknowledges what it saw
    expect(
      (
        await api.post('/api/v3/services', {
          name: 'late',
          type: 'external',
          resource: 'late.example.com',
          targetPort: 80,
          tags: ['checkout'],
        })
      ).status,
    ).toBe(201);
    await expect.poll(async () => (await agent.changes()).microserviceConfig, poll).toBe(true);
    expect(await agent.acknowledge(seen.lastUpdated)).toBe(200);

    // Assess
    expect((await agent.changes()).microserviceConfig).toBe(true);
    expect(
      Object.keys(((await agent.routerConfig()).bridges as { tcpListeners: object }).tcpListeners),
    ).toEqual(['late-listener']);
  });

  it('refuses to acknowledge changes the agent was never shown', async () => {
    // Prepare
    const { lastUpdated } = await agent.changes();

    // Act
    const response = await (await agent.client()).patch('/api/v3/agent/config/changes', {
      lastUpdated: lastUpdated + 1000,
    });

    // Assess
    expect(response.status).toBe(400);
    expect(response.body).toEqual({
      name: 'ValidationError',
      message: `Field 'lastUpdated' is ahead of the changes this agent was shown, got ${lastUpdated + 1000}`,
    });
    expect((await agent.changes()).lastUpdated).toBe(lastUpdated);
  });

  it('lists the router system microservice with its config as a JSON string, and its registry microservices', async () => {
    // Prepare
    expect((await api.post('/api/v3/application', { name: 'orders' })).status).toBe(201);
    const ms = await api.post<{ uuid: string }>('/api/v3/microservices', {
      name: 'checkout',
      application: 'orders',
      iofogUuid: agent.uuid,
    });

    // Act
    const list = await agent.microservices();
    const one = await (await agent.client()).get<{ microservice: { uuid: string } }>(
      `/api/v3/agent/microservices/${ms.body.uuid}`,
    );

    // Assess
    const router = list.find((microservice) => microservice.isRouter)!;
    expect(router).toMatchObject({
      uuid: `${agent.uuid}-router`,
      name: 'router',
      application: 'system-edge-checkout',
      isRouter: true,
    });
    expect(typeof router.config).toBe('string');
    expect(JSON.parse(router.config)).toEqual(
      (await api.get(`/api/v3/iofog/${agent.uuid}/router-config`)).body,
    );
    expect(list.map((microservice) => microservice.name).sort()).toEqual(['checkout', 'router']);
    expect(one.status).toBe(200);
    expect(one.body.microservice.uuid).toBe(ms.body.uuid);
    expect((await agent.changes()).microserviceList).toBe(true);
  });
});
