import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  backendAgentConfig,
  checkoutConnector,
  checkoutConnectorHostNetwork,
  checkoutConnectorInterior,
  checkoutListener,
  checkoutYaml,
  remoteHubConfig,
  secondAgentConfig,
  sshConnector,
  sshConnectorInterior,
  vendorConnector,
} from '../fixtures/seed-000.js';
import { createAgent, createSeedWorld } from '../fixtures/world.js';
import type { ApiClient } from '../support/client.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';

type RouterConfig = {
  bridges?: { tcpListeners?: Record<string, unknown>; tcpConnectors?: Record<string, unknown> };
};

const poll = { timeout: 60_000, interval: 100 };
let t: TestRuntime;
let api: ApiClient;

const routerConfig = async (uuid: string) =>
  (await api.get<RouterConfig>(`/api/v3/iofog/${uuid}/router-config`)).body;
const hubConfig = async () => (await api.get<RouterConfig>('/api/v3/router/hub-config')).body;
const serviceStatus = async (name: string) =>
  (await api.get<{ provisioningStatus: string }>(`/api/v3/services/${name}`)).body.provisioningStatus;

beforeAll(async () => {
  t = await startTestRuntime();
  api = t.api;
  await createSeedWorld(api);
});

afterAll(async () => {
  await t?.stop();
});

describe('seed 000 worked objects on a remote control plane', () => {
  it('promotes the first agent to system agent with an interior router and NATS server', async () => {
    // Act
    const { body } = await api.get<{
      fogs: { name: string; isSystem: boolean; routerMode: string; natsMode: string }[];
    }>('/api/v3/iofog-list');
    const router = await api.get('/api/v3/router');

    // Assess
    const hub = body.fogs.find((fog) => fog.name === 'hub');
    expect(hub).toMatchObject({ isSystem: true, routerMode: 'interior', natsMode: 'server' });
    expect(body.fogs.find((fog) => fog.name === 'fog-a')).toMatchObject({
      isSystem: false,
      routerMode: 'edge',
    });
    expect(router).toMatchObject({
      status: 200,
      body: { host: 'hub.example.com', messagingPort: 5671, interRouterPort: 55671, edgeRouterPort: 45671 },
    });
  });

  it('creates the checkout service from the seed YAML: pending, first bridge port, hub host as endpoint', async () => {
    // Act
    const created = await api.postYaml('/api/v3/services/yaml', checkoutYaml);

    // Assess
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      name: 'checkout',
      type: 'microservice',
      resource: '11111111-1111-1111-1111-111111111111',
      targetPort: 8080,
      servicePort: 10024,
      k8sType: null,
      defaultBridge: 'default-router',
      bridgePort: 10024,
      serviceEndpoint: 'hub.example.com',
      tags: ['checkout'],
      provisioningStatus: 'pending',
      provisioningError: null,
    });
    await expect.poll(() => serviceStatus('checkout'), poll).toBe('ready');
  });

  it('writes the remote hub router config with exactly the bridges the seed shows', async () => {
    // Act / Assess: the seed's document is the bridges part; the router's own part (identity, links,
    // TLS) is checked in router-fabric.test.ts
    await expect.poll(async () => (await hubConfig()).bridges, poll).toEqual(remoteHubConfig.bridges);
    expect((await hubConfig()).bridges?.tcpListeners?.['checkout-listener']).toEqual(checkoutListener);
  });

  it('puts the connector and, because its tags select the service, the listener on the backend agent', async () => {
    // Act / Assess
    await expect
      .poll(async () => (await routerConfig('fog-a')).bridges, poll)
      .toEqual(backendAgentConfig.bridges);
    expect((await routerConfig('fog-a')).bridges?.tcpConnectors?.['checkout-connector']).toEqual(
      checkoutConnector,
    );
  });

  it('gives a second tagged agent the listener only', async () => {
    // Prepare
    const fogB = await createAgent(api, {
      name: 'fog-b',
      host: '10.0.0.6',
      tags: ['service.iofog.org/tag: checkout'],
    });

    // Act / Assess: the listener only; a router's document always carries both bridge maps
    await expect
      .poll(async () => (await routerConfig(fogB)).bridges, poll)
      .toEqual({ ...secondAgentConfig.bridges, tcpConnectors: {} });
  });

  it('dials edgelet.default.svc.bridge.local for a host-network microservice on an edge router', async () => {
    // Act
    const patched = await api.patch('/api/v3/microservices/11111111-1111-1111-1111-111111111111', {
      hostNetworkMode: true,
    });

    // Assess
    expect(patched.status).toBe(204);
    await expect
      .poll(async () => (await routerConfig('fog-a')).bridges?.tcpConnectors?.['checkout-connector'], poll)
      .toEqual(checkoutConnectorHostNetwork);
  });

  it('moves the connector to an interior agent (127.0.0.1) and removes it from the old agent', async () => {
    // Prepare
    await createAgent(api, { uuid: 'fog-i', name: 'fog-i', host: '10.0.0.7', routerMode: 'interior' });

    // Act
    const moved = await api.patch('/api/v3/microservices/11111111-1111-1111-1111-111111111111', {
      iofogUuid: 'fog-i',
    });

    // Assess
    expect(moved.status).toBe(204);
    await expect
      .poll(async () => (await routerConfig('fog-i')).bridges?.tcpConnectors, poll)
      .toEqual({ 'checkout-connector': checkoutConnectorInterior });
    expect((await routerConfig('fog-a')).bridges).toEqual({
      tcpConnectors: {},
      tcpListeners: { 'checkout-listener': checkoutListener },
    });
    await expect.poll(() => serviceStatus('checkout'), poll).toBe('ready');
  });

  it('builds the agent-type connector of the seed (ssh on fog-a, edge router)', async () => {
    // Act
    const created = await api.post('/api/v3/services', {
      name: 'ssh',
      type: 'agent',
      resource: 'fog-a',
      targetPort: 22,
    });

    // Assess
    expect(created.status).toBe(201);
    await expect
      .poll(async () => (await routerConfig('fog-a')).bridges?.tcpConnectors?.['ssh-connector'], poll)
      .toEqual(sshConnector);
  });

  it('switches the agent connector to 127.0.0.1 when the agent becomes interior', async () => {
    // Act
    const patched = await api.patch('/api/v3/iofog/fog-a', { routerMode: 'interior' });

    // Assess
    expect(patched.status).toBe(204);
    await expect
      .poll(async () => (await routerConfig('fog-a')).bridges?.tcpConnectors?.['ssh-connector'], poll)
      .toEqual(sshConnectorInterior);
  });

  it('places an external service connector on the default router (the hub)', async () => {
    // Act
    const created = await api.post('/api/v3/services', {
      name: 'vendor',
      type: 'external',
      resource: '203.0.113.10',
      targetPort: 443,
    });

    // Assess
    expect(created.status).toBe(201);
    await expect.poll(() => serviceStatus('vendor'), poll).toBe('ready');
    const hub = await hubConfig();
    expect(hub.bridges?.tcpConnectors).toEqual({ 'vendor-connector': vendorConnector });
    expect(hub.bridges?.tcpListeners?.['vendor-listener']).toEqual({
      name: 'vendor-listener',
      port: String((created.body as { bridgePort: number }).bridgePort),
      address: 'vendor',
    });
  });

  it('distributes listeners by the plant-a / plant-b / plant-c table', async () => {
    // Prepare
    const plantA = await createAgent(api, {
      name: 'plant-a',
      host: '10.0.1.1',
      tags: ['service.iofog.org/tag: checkout'],
    });
    const plantB = await createAgent(api, {
      name: 'plant-b',
      host: '10.0.1.2',
      tags: ['service.iofog.org/tag: all'],
    });
    const plantC = await createAgent(api, { name: 'plant-c', host: '10.0.1.3', tags: ['checkout'] });
    const listenerNames = async (uuid: string) =>
      Object.keys((await routerConfig(uuid)).bridges?.tcpListeners ?? {}).sort();

    // Act / Assess: checkout-listener only; a listener for every service; none
    await expect.poll(() => listenerNames(plantA), poll).toEqual(['checkout-listener']);
    await expect
      .poll(() => listenerNames(plantB), poll)
      .toEqual(['checkout-listener', 'ssh-listener', 'vendor-listener']);
    expect((await routerConfig(plantA)).bridges?.tcpListeners?.['checkout-listener']).toEqual(
      checkoutListener,
    );
    // plant-c's reconcile runs on its own: its config, once written, holds no bridge at all.
    await expect
      .poll(async () => (await routerConfig(plantC)).bridges, poll)
      .toEqual({ tcpListeners: {}, tcpConnectors: {} });
  });

  it('selects nothing with "service.iofog.org/tag:checkout" and says why in the agent response', async () => {
    // Act
    const created = await api.post<{ uuid: string; warnings: string[] }>('/api/v3/iofog', {
      name: 'plant-d',
      host: '10.0.1.4',
      tags: ['service.iofog.org/tag:checkout'],
    });

    // Assess
    expect(created.status).toBe(201);
    expect(created.body.warnings).toEqual([
      'Tag "service.iofog.org/tag:checkout" selects no services: a distribution tag is written "service.iofog.org/tag: <token>" with one space after the colon',
    ]);
    const agent = await api.get<{ warnings: string[] }>(`/api/v3/iofog/${created.body.uuid}`);
    expect(agent.body.warnings).toHaveLength(1);
    await expect
      .poll(async () => (await routerConfig(created.body.uuid)).bridges, poll)
      .toEqual({ tcpListeners: {}, tcpConnectors: {} });
  });

  it('drops listeners from agents that lost the tag when service tags change (old ∪ new reconciled)', async () => {
    // Prepare
    const fogB = (
      await api.get<{ fogs: { uuid: string; name: string }[] }>('/api/v3/iofog-list')
    ).body.fogs.find((fog) => fog.name === 'fog-b')!.uuid;

    // Act
    const patched = await api.patch('/api/v3/services/checkout', { tags: ['shop'] });

    // Assess
    expect(patched.status).toBe(204);
    await expect
      .poll(async () => (await routerConfig(fogB)).bridges, poll)
      .toEqual({ tcpListeners: {}, tcpConnectors: {} });
    await expect.poll(() => serviceStatus('checkout'), poll).toBe('ready');
    expect((await hubConfig()).bridges?.tcpListeners?.['checkout-listener']).toEqual(checkoutListener);
  });

  it('deletes a service from the hub, its connector site and every tagged agent', async () => {
    // Prepare
    const plantB = (
      await api.get<{ fogs: { uuid: string; name: string }[] }>('/api/v3/iofog-list')
    ).body.fogs.find((fog) => fog.name === 'plant-b')!.uuid;

    // Act
    const deleted = await api.delete('/api/v3/services/vendor');

    // Assess
    expect(deleted.status).toBe(204);
    expect((await api.get('/api/v3/services/vendor')).status).toBe(404);
    await expect.poll(async () => (await hubConfig()).bridges?.tcpConnectors, poll).toEqual({});
    await expect
      .poll(async () => Object.keys((await hubConfig()).bridges?.tcpListeners ?? {}).sort(), poll)
      .toEqual(['checkout-listener', 'ssh-listener']);
    await expect
      .poll(async () => Object.keys((await routerConfig(plantB)).bridges?.tcpListeners ?? {}).sort(), poll)
      .toEqual(['checkout-listener', 'ssh-listener']);
  });
});
