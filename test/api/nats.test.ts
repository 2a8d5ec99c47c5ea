import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintUserToken } from '../../infra/local/auth.js';
import { createAgent, HUB } from '../fixtures/world.js';
import { ApiClient, eventually } from '../support/client.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';
import { ScriptedAgent } from '../support/scripted-agent.js';

/** The NATS hub and bootstrap routes on a remote control plane (the default of the local runtime). */
const poll = { timeout: 60_000, interval: 200 };
let t: TestRuntime;
let api: ApiClient;
let viewer: ApiClient;
const HUB_PATH = '/api/v3/nats/hub';
const agentUuid = async (name: string) =>
  (await api.get<{ fogs: { uuid: string; name: string }[] }>('/api/v3/iofog-list')).body.fogs.find(
    (agent) => agent.name === name,
  )!.uuid;
const outcome = (response: { status: number; body: unknown }) => ({
  status: response.status,
  body: response.body,
});

beforeAll(async () => {
  t = await startTestRuntime();
  api = t.api;
  viewer = new ApiClient(t.runtime.url, await mintUserToken(t.dataDir, { role: 'viewer', subject: 'vera' }));
});

afterAll(async () => {
  await t?.stop();
});

describe('the NATS hub on a remote control plane', () => {
  it('is not found before the first agent, with how to register it', async () => {
    // Act
    const response = await api.get(HUB_PATH);

    // Assess
    expect(outcome(response)).toEqual({
      status: 404,
      body: { name: 'NotFoundError', message: 'NATS hub not found: register it with PUT /api/v3/nats/hub' },
    });
  });

  it("is the system agent's NATS server once the first agent is created, with its ports", async () => {
    // Prepare
    await createAgent(api, { ...HUB, natsLeafPort: 17422 });

    // Act
    const response = await viewer.get(HUB_PATH);

    // Assess
    expect(outcome(response)).toEqual({
      status: 200,
      body: {
        host: HUB.host,
        serverPort: 4222,
        clusterPort: 6222,
        leafPort: 17422,
        mqttPort: 8883,
        httpPort: 8222,
      },
    });
  });

  it('takes 0 (or nothing) as the default port on PUT, and answers the six-field view', async () => {
    // Act
    const response = await api.put(HUB_PATH, {
      host: 'nats.example.com',
      serverPort: 0,
      clusterPort: 16222,
      leafPort: 0,
      mqttPort: 0,
    });

    // Assess
    expect(outcome(response)).toEqual({
      status: 200,
      body: {
        host: 'nats.example.com',
        serverPort: 4222,
        clusterPort: 16222,
        leafPort: 7422,
        mqttPort: 8883,
        httpPort: 8222,
      },
    });
    expect((await api.get(HUB_PATH)).body).toEqual(response.body);
  });

  it('renders a leaf that dials the registered hub over TLS, as its Edgelet receives it', async () => {
    // Prepare
    const leaf = await createAgent(api, { name: 'fog-leaf', host: '10.0.0.7' });
    const key = await api.get<{ key: string }>(`/api/v3/iofog/${leaf}/provisioning-key`);
    const edgelet = new ScriptedAgent(t.runtime.url);
    await edgelet.provision(key.body.key, 1);

    // Act
    await expect
      .poll(
        async () => (await api.get<{ platformStatus: unknown }>(`/api/v3/iofog/${leaf}`)).body.platformStatus,
        poll,
      )
      .toEqual({ phase: 'ready', message: null });
    const nats = (await edgelet.loadMicroservices()).find((microservice) => microservice.isNats)!;
    await edgelet.loadVolumeMounts();
    const leafConf = edgelet.containerFile(nats, '/etc/nats/config/server.conf')!;

    // Assess
    expect((await api.get(`/api/v3/iofog/${leaf}`)).body).toMatchObject({
      natsMode: 'leaf',
      upstreamNatsServers: ['default-nats-hub'],
    });
    const remotes = JSON.parse(/remotes: (\[.*\])$/m.exec(leafConf)![1]!) as {
      urls: string[];
      credentials: string;
    }[];
    expect(remotes.map((remote) => remote.urls)).toEqual([['tls://nats.example.com:7422']]);
    expect(edgelet.containerFile(nats, remotes[0]!.credentials)).toMatch(/^-----BEGIN NATS USER JWT-----\n/);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['no host', { serverPort: 4222 }, "Required field 'host' is missing"],
    ['a port out of range', { host: 'nats.example.com', leafPort: 70000 }, "Field 'leafPort'"],
    ['a Kubernetes quantity', { host: 'nats.example.com', jsStorageSize: '1Gi' }, "Field 'jsStorageSize'"],
  ])('refuses a PUT with %s (400, naming the field), changing nothing', async (_case, body, message) => {
    // Prepare
    const before = (await api.get(HUB_PATH)).body;

    // Act
    const response = await api.put<{ name: string; message: string }>(HUB_PATH, body);

    // Assess
    expect(response.status).toBe(400);
    expect(response.body.name).toBe('ValidationError');
    expect(response.body.message).toContain(message);
    expect((await api.get(HUB_PATH)).body).toEqual(before);
  });

  it('refuses a PUT from a viewer (403)', async () => {
    // Act
    const response = await viewer.put(HUB_PATH, { host: 'evil.example.com' });

    // Assess
    expect(outcome(response)).toEqual({
      status: 403,
      body: { name: 'ForbiddenError', message: 'This request needs the admin role' },
    });
  });
});

describe('the NATS bootstrap on a remote control plane', () => {
  it('is 403 with the reference message: only the Kubernetes operator bootstraps', async () => {
    // Act
    const response = await api.get('/api/v3/nats/bootstrap');

    // Assess
    expect(outcome(response)).toEqual({
      status: 403,
      body: {
        name: 'ForbiddenError',
        message: 'NATS bootstrap is only available when the Controller runs on the Kubernetes control plane',
      },
    });
  });

  it('is 403 for a viewer, who may never read seeds', async () => {
    // Act
    const response = await viewer.get('/api/v3/nats/bootstrap');

    // Assess
    expect(outcome(response)).toEqual({
      status: 403,
      body: { name: 'ForbiddenError', message: 'This request needs the admin role' },
    });
  });
});

describe("an agent's NATS process through mode changes and removal", () => {
  let hubEdgelet: ScriptedAgent;
  let hubUuid: string;
  const hubConf = async () => {
    await hubEdgelet.poll();
    const nats = hubEdgelet.microservices.find((microservice) => microservice.isNats)!;
    return { nats, conf: hubEdgelet.containerFile(nats, '/etc/nats/config/server.conf') ?? '' };
  };

  beforeAll(async () => {
    hubUuid = await agentUuid(HUB.name);
    const key = await api.get<{ key: string }>(`/api/v3/iofog/${hubUuid}/provisioning-key`);
    hubEdgelet = new ScriptedAgent(t.runtime.url);
    await hubEdgelet.provision(key.body.key, 1);
    // The hub's NATS process exists once its fabric is made (background work, slower on a busy machine).
    await eventually(async () => {
      await hubEdgelet.poll();
      return hubEdgelet.microservices.some((microservice) => microservice.isNats) ? true : undefined;
    }, "the hub's NATS microservice");
  });

  it('re-renders the hub with the cluster template when a second server arrives, and asks it to rebuild once', async () => {
    // Prepare
    expect((await hubConf()).conf).not.toContain('cluster: {');

    // Act
    await createAgent(api, { name: 'fog-server', host: '10.0.0.8', natsMode: 'server' });

    // Assess: the microservice Edgelet fetched with the new file asks for a rebuild
    await expect
      .poll(async () => {
        const { conf, nats } = await hubConf();
        return conf.includes('cluster: {') && nats.rebuild;
      }, poll)
      .toBe(true);
    const { conf } = await hubConf();
    expect((JSON.parse(/routes: (\[.*\])/.exec(conf)![1]!) as string[]).sort()).toEqual(
      ['nats://10.0.0.8:6222', `nats://${HUB.host}:6222`].sort(),
    );
    // Acknowledged by the tick that fetched it (hubConf polls), so the next list no longer asks.
    await hubEdgelet.poll();
    expect((await hubEdgelet.loadMicroservices()).find((microservice) => microservice.isNats)!.rebuild).toBe(
      false,
    );
  });

  it('returns the hub to the single-server template when that server becomes a leaf', async () => {
    // Prepare
    const server = await agentUuid('fog-server');

    // Act
    expect((await api.patch(`/api/v3/iofog/${server}`, { natsMode: 'leaf' })).status).toBe(204);

    // Assess
    await expect.poll(async () => (await hubConf()).conf, poll).not.toContain('cluster: {');
    expect((await hubConf()).conf).toContain(`advertise: ${HUB.host}`);
  });

  it('removes every NATS file and the microservice of an agent set to natsMode none', async () => {
    // Prepare
    const leaf = await createAgent(api, { name: 'fog-quiet', host: '10.0.0.9' });
    const key = await api.get<{ key: string }>(`/api/v3/iofog/${leaf}/provisioning-key`);
    const edgelet = new ScriptedAgent(t.runtime.url);
    await edgelet.provision(key.body.key, 1);
    const natsMounts = async () =>
      ((await edgelet.loadVolumeMounts()) as { name: string }[])
        .map((mount) => mount.name)
        .filter((name) => name.startsWith('nats-'));
    await expect.poll(natsMounts, poll).toHaveLength(5);

    // Act
    expect((await api.patch(`/api/v3/iofog/${leaf}`, { natsMode: 'none' })).status).toBe(204);

    // Assess
    await expect.poll(natsMounts, poll).toEqual([]);
    expect((await edgelet.loadMicroservices()).filter((microservice) => microservice.isNats)).toEqual([]);
    const certificates = async () =>
      (await api.get<{ certificates: { name: string }[] }>('/api/v3/certificates')).body.certificates
        .map((certificate) => certificate.name)
        .filter((name) => name.endsWith('-fog-quiet'))
        .sort();
    await expect
      .poll(certificates, poll)
      .toEqual(['router-local-server-fog-quiet', 'router-site-server-fog-quiet']);
  });

  it.each<[string, Record<string, unknown>, string]>([
    [
      'the system agent leaving server mode',
      { natsMode: 'leaf' },
      "Field 'natsMode': the system agent must stay server",
    ],
  ])('refuses %s (400)', async (_case, patch, message) => {
    // Act
    const response = await api.patch<{ name: string; message: string }>(`/api/v3/iofog/${hubUuid}`, patch);

    // Assess
    expect(response.status).toBe(400);
    expect(response.body.message).toContain(message);
  });

  it('refuses a leaf whose upstream is not a NATS server, naming it', async () => {
    // Act
    const response = await api.post<{ name: string; message: string }>('/api/v3/iofog', {
      name: 'fog-lost',
      host: '10.0.0.10',
      upstreamNatsServers: ['fog-quiet'],
    });

    // Assess
    expect({ status: response.status, body: response.body }).toEqual({
      status: 400,
      body: {
        name: 'ValidationError',
        message:
          'Field \'upstreamNatsServers\': "fog-quiet" is not a NATS server (an agent with natsMode server, or default-nats-hub)',
      },
    });
  });
});
