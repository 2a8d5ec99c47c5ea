import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkoutListener } from '../fixtures/seed-000.js';
import { createAgent, createHub, fabricSettled } from '../fixtures/world.js';
import type { ApiClient } from '../support/client.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';
import { EdgeletError, ScriptedAgent } from '../support/scripted-agent.js';

/**
 * The agent routes driven exactly as Edgelet drives them (test/support/scripted-agent.ts follows
 * EDGELET-PROTOCOL.md and Edgelet's source), for an edge agent and for the system agent.
 */
const poll = { timeout: 60_000, interval: 100 };
let t: TestRuntime;
let api: ApiClient;
let edge: ScriptedAgent;
let system: ScriptedAgent;
/** The two agents, by the name the test titles use (resolved when a test runs, after beforeAll). */
const AGENTS = ['the edge agent', 'the system agent'] as const;
const agentNamed = (name: (typeof AGENTS)[number]) => (name === 'the edge agent' ? edge : system);

async function provision(uuid: string): Promise<ScriptedAgent> {
  const key = await api.get<{ key: string }>(`/api/v3/iofog/${uuid}/provisioning-key`);
  expect(key.status).toBe(200);
  const agent = new ScriptedAgent(t.runtime.url);
  await agent.provision(key.body.key, 1);
  return agent;
}

/** Every answer Edgelet got was one its client counts as success. */
const allSucceeded = (agent: ScriptedAgent) =>
  expect(agent.exchanges.filter((exchange) => !/-> (200|204)$/.test(exchange))).toEqual([]);

beforeAll(async () => {
  t = await startTestRuntime();
  api = t.api;
  const hub = await createHub(api);
  const edgeUuid = await createAgent(api, {
    name: 'edge-checkout',
    host: '10.0.0.5',
    tags: ['service.iofog.org/tag: checkout'],
  });
  // Every agent's fabric (certificates, NATS files) is made before the agents read it.
  await fabricSettled(api);
  [edge, system] = [await provision(edgeUuid), await provision(hub)];
});

afterAll(async () => {
  await t?.stop();
});

describe('provisioning and the first changes tick, as Edgelet does them', () => {
  it.each(AGENTS)(
    'provisions %s with a key Edgelet can sign with, and reports to the controller',
    async (name) => {
      const agent = agentNamed(name);
      // Assess: provision() loaded the JWK with Edgelet's rule, signed the config and status calls with it
      expect(agent.uuid).not.toBe('');
      expect(agent.namespace).toBe('default');
      expect(agent.exchanges.slice(0, 3)).toEqual([
        'POST provision -> 200',
        'PATCH config -> 204',
        'PUT status -> 204',
      ]);
      expect(await agent.ping()).toBe(true);
    },
  );

  it.each(AGENTS)(
    'ends initialization on the first tick for %s, acknowledging with the string it was shown',
    async (name) => {
      const agent = agentNamed(name);
      // Act
      const tick = await agent.poll();

      // Assess
      expect(tick.flags).toMatchObject({ registries: true, volumeMounts: true, microserviceList: true });
      expect(tick.acknowledged).toBe(true);
      expect(agent.initialization).toBe(false);
      const { flags, lastUpdated } = await agent.changes();
      expect(lastUpdated).toMatch(/^\d+$/);
      expect(Object.values(flags).every((flag) => flag === false)).toBe(true);
      allSucceeded(agent);
    },
  );

  it('answers every reference change flag as a boolean and lastUpdated as a string', async () => {
    // Act
    const { raw } = await edge.changes();

    // Assess
    expect(raw).toEqual({
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
      lastUpdated: expect.stringMatching(/^\d+$/),
    });
  });

  it('serves the registries with numeric ids, the built-in Docker Hub and cache first', async () => {
    // Act
    const registries = await edge.loadRegistries();

    // Assess
    expect(registries.slice(0, 2)).toEqual([
      { id: 1, url: 'registry.hub.docker.com', isPublic: true },
      { id: 2, url: 'from_cache', isPublic: true },
    ]);
  });

  it("hands a private registry's credentials only to the agent whose microservice pulls from it", async () => {
    // Prepare: a private registry, a microservice on the edge agent that uses it
    const created = await api.post<{ id: number }>('/api/v3/registries', {
      url: 'private.example.com',
      isPublic: false,
      username: 'puller',
      password: 's3cret',
    });
    expect(created.status).toBe(201);
    expect((await api.post('/api/v3/application', { name: 'private-app' })).status).toBe(201);
    const stamp = Number((await edge.changes()).lastUpdated);
    const microservice = await api.post('/api/v3/microservices', {
      name: 'pulls-private',
      application: 'private-app',
      agentName: 'edge-checkout',
      registryId: created.body.id,
      images: [{ containerImage: 'private.example.com/app:1', fogTypeId: 1 }],
    });
    expect(microservice.status).toBe(201);

    // Act
    const changes = await edge.changes();
    const read = async (agent: ScriptedAgent) =>
      ((await agent.request('GET', 'registries')).registries as Record<string, unknown>[]).find(
        (registry) => registry.id === created.body.id,
      );

    // Assess: the edge agent is told to reload its registries, and only it gets the password
    expect(Number(changes.lastUpdated)).toBeGreaterThan(stamp);
    expect(changes.flags.registries).toBe(true);
    expect(await read(edge)).toMatchObject({
      url: 'private.example.com',
      username: 'puller',
      password: 's3cret',
    });
    expect(await read(system)).toMatchObject({ url: 'private.example.com', username: '', password: '' });
    expect((await api.delete('/api/v3/application/private-app')).status).toBe(204);
    expect((await api.delete(`/api/v3/registries/${created.body.id}`)).status).toBe(204);
  });

  it('answers volume mounts with the router and NATS certificates (base64 PEM files) and the NATS files, models and runtime classes empty', async () => {
    // Act
    const mounts = (await edge.loadVolumeMounts()) as {
      name: string;
      type: string;
      version: number;
      data: Record<string, string>;
    }[];

    // Assess: each certificate mount is a TLS secret whose certificate its own ca.crt verifies
    expect(mounts.map((mount) => [mount.name, mount.type, mount.version])).toEqual([
      ['router-site-server-edge-checkout', 'secret', 1],
      ['router-local-server-edge-checkout', 'secret', 1],
      ['nats-server-edge-checkout', 'secret', 1],
      ['nats-mqtt-server-edge-checkout', 'secret', 1],
      ['nats-server-conf-edge-checkout', 'secret', 1],
      // The JWT directory is composed when read: its version is the fleet's directory version.
      ['nats-jwt-dir-edge-checkout', 'configMap', expect.any(Number)],
      ['nats-creds-sys-admin-leaf-edge-checkout', 'secret', 1],
    ]);
    expect(mounts[5]!.version).toBeGreaterThan(1_000_000);
    const natsFiles = mounts.slice(4).map((mount) => Object.keys(mount.data));
    expect(natsFiles[0]).toEqual(['server.conf']);
    expect(natsFiles[1]).toEqual([expect.stringMatching(/^A[A-Z2-7]{55}\.jwt$/)]);
    expect(natsFiles[2]).toEqual(['sys/admin-leaf-edge-checkout.creds']);
    for (const mount of mounts.slice(0, 4)) {
      const file = (key: string) => Buffer.from(mount.data[key]!, 'base64').toString('utf8');
      expect(Object.keys(mount.data).sort()).toEqual(['ca.crt', 'tls.crt', 'tls.key']);
      expect(new X509Certificate(file('tls.crt')).verify(new X509Certificate(file('ca.crt')).publicKey)).toBe(
        true,
      );
      expect(file('tls.key')).toMatch(/^-----BEGIN EC PRIVATE KEY-----/);
    }
    expect(await edge.request('GET', 'models')).toEqual({ models: [] });
    expect(await edge.request('GET', 'runtimeClasses')).toEqual({ runtimeClasses: [] });
  });
});

describe('microservices an Edgelet can run', () => {
  it.each(AGENTS)(
    'gives %s exactly one router, which passes Edgelet parsing and registry resolution',
    async (name) => {
      const agent = agentNamed(name);
      // Act
      const list = await agent.loadMicroservices();

      // Assess
      const routers = list.filter((microservice) => microservice.isRouter);
      expect(routers).toHaveLength(1);
      const router = routers[0]!;
      expect(router).toMatchObject({
        uuid: `${agent.uuid}-router`,
        name: 'router',
        imageId: 'ghcr.io/datasance/router:3.9.0',
        registryId: 1,
        capAdd: ['NET_RAW'],
        // An interior router (the system agent) runs on the host network.
        hostNetworkMode: name === 'the system agent',
      });
      expect(router.env).toEqual([
        { key: 'QDROUTERD_CONF', value: '/tmp/skrouterd.json' },
        { key: 'QDROUTERD_CONF_TYPE', value: 'json' },
        { key: 'SKUPPER_SITE_ID', value: agent.uuid },
        { key: 'SKUPPER_PLATFORM', value: 'pot' },
        { key: 'SSL_PROFILE_PATH', value: '/etc/skupper-router-certs' },
      ]);
      expect(agent.resolveRegistry(router)).toMatchObject({ id: 1 });
      expect(agent.routerConfig()).toEqual((await api.get(`/api/v3/iofog/${agent.uuid}/router-config`)).body);
    },
  );

  it.each(AGENTS)(
    'gives %s one NATS microservice off the host network, every mount of which it receives',
    async (name) => {
      const agent = agentNamed(name);
      const token = name === 'the edge agent' ? 'edge-checkout' : 'hub';
      const user = name === 'the edge agent' ? `admin-leaf-${token}` : 'admin-hub';
      // Act
      const list = await agent.loadMicroservices();
      const mountNames = ((await agent.loadVolumeMounts()) as { name: string }[]).map((mount) => mount.name);

      // Assess
      const nats = list.filter((microservice) => microservice.isNats);
      expect(nats).toHaveLength(1);
      expect(nats[0]).toMatchObject({
        uuid: `${agent.uuid}-nats`,
        name: 'nats',
        imageId: 'ghcr.io/datasance/nats:2.15.0',
        registryId: 1,
        hostNetworkMode: false,
        isRouter: false,
        capAdd: ['NET_RAW'],
        portMappings: [4222, 6222, 7422, 8883, 8222].map((port) => ({
          internal: port,
          external: port,
        })),
        volumeMappings: [
          {
            hostDestination: `${token}-nats-jetstream`,
            containerDestination: '/home/runner/data',
            accessMode: 'rw',
            type: 'volume',
          },
          {
            hostDestination: `nats-server-conf-${token}`,
            containerDestination: '/etc/nats/config',
            accessMode: 'ro',
            type: 'volumeMount',
          },
          {
            hostDestination: `nats-jwt-dir-${token}`,
            containerDestination: '/tmp/nats/jwt',
            accessMode: 'rw',
            type: 'volumeMount',
          },
          {
            hostDestination: `nats-server-${token}`,
            containerDestination: `/etc/nats/certs/nats-server-${token}`,
            accessMode: 'ro',
            type: 'volumeMount',
          },
          {
            hostDestination: `nats-mqtt-server-${token}`,
            containerDestination: `/etc/nats/certs/nats-mqtt-server-${token}`,
            accessMode: 'ro',
            type: 'volumeMount',
          },
          {
            hostDestination: `nats-creds-sys-${user}`,
            containerDestination: '/etc/nats/creds',
            accessMode: 'ro',
            type: 'volumeMount',
          },
        ],
      });
      const env = Object.fromEntries(nats[0]!.env.map(({ key, value }) => [key, value]));
      expect(env).toMatchObject({
        NATS_SERVER_MODE: name === 'the edge agent' ? 'leaf' : 'server',
        NATS_CONF: '/etc/nats/config/server.conf',
        NATS_SYS_USER_CRED_PATH: `/etc/nats/creds/sys/${user}.creds`,
        NATS_CERT_NAME: `nats-server-${token}`,
        NATS_TLS_DIR: '/etc/nats/certs',
        NATS_MONITOR_PORT: '8222',
        JETSTREAM_PREV_KEY: '',
      });
      expect(Buffer.from(env.JETSTREAM_KEY!, 'base64')).toHaveLength(32);
      expect(agent.resolveRegistry(nats[0]!)).toMatchObject({ id: 1 });
      const mounted = nats[0]!.volumeMappings
        .filter((mapping) => mapping.type === 'volumeMount')
        .map((mapping) => mapping.hostDestination);
      expect(mounted.filter((mount) => !mountNames.includes(mount))).toEqual([]);
    },
  );

  it('delivers a registered microservice with the image for the agent architecture, and skips one without', async () => {
    // Prepare
    expect((await api.post('/api/v3/application', { name: 'orders' })).status).toBe(201);
    const both = await api.post<{ uuid: string }>('/api/v3/microservices', {
      name: 'checkout',
      application: 'orders',
      iofogUuid: edge.uuid,
      images: [
        { containerImage: 'ghcr.io/example/checkout:1.0', fogTypeId: 1 },
        { containerImage: 'ghcr.io/example/checkout:1.0-arm64', fogTypeId: 2 },
      ],
      registryId: 2,
      config: { greeting: 'hello' },
    });
    const armOnly = await api.post('/api/v3/microservices', {
      name: 'arm-only',
      application: 'orders',
      iofogUuid: edge.uuid,
      images: [{ containerImage: 'ghcr.io/example/arm-only:1.0', fogTypeId: 2 }],
    });
    expect([both.status, armOnly.status]).toEqual([201, 201]);

    // Act
    const tick = await edge.poll();

    // Assess
    expect(tick.flags.microserviceList).toBe(true);
    const checkout = edge.microservices.find((microservice) => microservice.name === 'checkout');
    expect(checkout).toMatchObject({
      uuid: both.body.uuid,
      imageId: 'ghcr.io/example/checkout:1.0',
      registryId: 2,
      application: 'orders',
      isRouter: false,
    });
    expect(JSON.parse(checkout!.config)).toEqual({ greeting: 'hello' });
    expect(edge.resolveRegistry(checkout!)).toMatchObject({ id: 2 });
    expect(edge.microservices.map((microservice) => microservice.name).sort()).toEqual([
      'checkout',
      'nats',
      'router',
    ]);
    expect(await edge.request('GET', `microservices/${both.body.uuid}`)).toMatchObject({
      microservice: { uuid: both.body.uuid, imageId: 'ghcr.io/example/checkout:1.0' },
    });
    allSucceeded(edge);
  });
});

describe('status and settings reach the controller', () => {
  it('shows the last status report, the agent health and its router health on the agent', async () => {
    // Prepare
    await edge.loadMicroservices();

    // Act
    await edge.reportStatus({ daemonStatus: 'RUNNING', cpuUsage: 7.25 });
    const { body } = await api.get<Record<string, unknown>>(`/api/v3/iofog/${edge.uuid}`);
    const list = await api.get<{ fogs: Record<string, unknown>[] }>('/api/v3/iofog-list');

    // Assess
    expect(body).toMatchObject({
      daemonStatus: 'RUNNING',
      cpuUsage: 7.25,
      ipAddress: '10.0.0.5',
      version: '1.1.0',
      fogTypeId: 1,
      routerStatus: { status: 'RUNNING', healthStatus: 'HEALTHY' },
    });
    expect(Date.now() - Number(body.lastActive)).toBeLessThan(60_000);
    expect(list.body.fogs.find((fog) => fog.uuid === edge.uuid)).toMatchObject({ daemonStatus: 'RUNNING' });
  });

  it('answers GET /agent/config with the settings the agent sent', async () => {
    // Act
    const settings = await edge.request('GET', 'config');

    // Assess
    expect(settings).toEqual({ networkInterface: 'eth0', statusFrequency: 10, changeFrequency: 20 });
  });
});

describe('an Edgelet pulling its router config', () => {
  it('raises microserviceConfig when a checkout service is created; the pulled config holds checkout-listener', async () => {
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
    await expect.poll(async () => (await edge.changes()).flags.microserviceConfig, poll).toBe(true);
    const { routerConfig, acknowledged } = await edge.poll();
    expect(acknowledged).toBe(true);
    expect(routerConfig?.bridges).toEqual({
      tcpListeners: { 'checkout-listener': checkoutListener },
      tcpConnectors: {},
    });
    expect((await edge.changes()).flags.microserviceConfig).toBe(false);
  });

  it('raises the flag again on delete, and the listener is gone from the pulled config', async () => {
    // Act
    expect((await api.delete('/api/v3/services/checkout')).status).toBe(204);

    // Assess
    await expect.poll(async () => (await edge.changes()).flags.microserviceConfig, poll).toBe(true);
    const { routerConfig } = await edge.poll();
    expect(routerConfig?.bridges).toEqual({ tcpListeners: {}, tcpConnectors: {} });
    allSucceeded(edge);
  });

  it('never acknowledges away a change written after the agent read the flags', async () => {
    // Prepare: the agent reads the flags ...
    const seen = await edge.changes();

    // Act: ... a change lands before it acknowledges what it saw
    const created = await api.post('/api/v3/services', {
      name: 'late',
      type: 'external',
      resource: 'late.example.com',
      targetPort: 80,
      tags: ['checkout'],
    });
    expect(created.status).toBe(201);
    await expect.poll(async () => (await edge.changes()).flags.microserviceConfig, poll).toBe(true);
    await edge.request('PATCH', 'config/changes', { lastUpdated: seen.lastUpdated });

    // Assess
    expect((await edge.changes()).flags.microserviceConfig).toBe(true);
    await edge.loadMicroservices();
    const bridges = edge.routerConfig()?.bridges as { tcpListeners: object } | undefined;
    expect(Object.keys(bridges?.tcpListeners ?? {})).toEqual(['late-listener']);
  });

  it('refuses to acknowledge changes the agent was never shown, and takes an older agent number', async () => {
    // Prepare
    const { lastUpdated } = await edge.changes();
    const ahead = String(Number(lastUpdated) + 1000);

    // Act
    const refused = await edge.request('PATCH', 'config/changes', { lastUpdated: ahead }).catch((e) => e);
    const asNumber = await edge.request('PATCH', 'config/changes', { lastUpdated: Number(lastUpdated) });

    // Assess
    expect(refused).toBeInstanceOf(EdgeletError);
    expect((refused as EdgeletError).status).toBe(400);
    expect(JSON.parse((refused as EdgeletError).body)).toEqual({
      name: 'ValidationError',
      message: `Field 'lastUpdated' is ahead of the changes this agent was shown, got "${ahead}"`,
    });
    expect(asNumber).toEqual({});
    expect((await edge.changes()).lastUpdated).toBe(lastUpdated);
  });
});
