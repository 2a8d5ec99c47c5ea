import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHub, fabricSettled } from '../fixtures/world.js';
import type { ApiClient } from '../support/client.js';
import { withClients } from '../support/processes.js';
import { routersQuiescent } from '../support/quiescent.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';

type RouterConfig = {
  bridges?: { tcpListeners?: Record<string, { port: string }>; tcpConnectors?: Record<string, unknown> };
};
type Service = { name: string; bridgePort: number; provisioningStatus: string };

const SERVICES = 200;
const CLIENTS = 20;
const poll = { timeout: 240_000, interval: 250 };
let t: TestRuntime;
let api: ApiClient;
let edgeAgent: string;

const names = Array.from({ length: SERVICES }, (_, i) => `svc-${String(i).padStart(3, '0')}`);
const hubConfig = async () => (await api.get<RouterConfig>('/api/v3/router/hub-config')).body;
const agentConfig = async () =>
  (await api.get<RouterConfig>(`/api/v3/iofog/${edgeAgent}/router-config`)).body;
const listServices = async () => (await api.get<Service[]>('/api/v3/services')).body;
const sortedKeys = (record: Record<string, unknown> | undefined) => Object.keys(record ?? {}).sort();

beforeAll(async () => {
  t = await startTestRuntime({ workerConcurrency: 4 });
  api = t.api;
  await createHub(api);
  const edge = await api.post<{ uuid: string }>('/api/v3/iofog', {
    name: 'edge-all',
    host: '10.0.0.9',
    tags: ['service.iofog.org/tag: all'],
  });
  edgeAgent = edge.body.uuid;
});

afterAll(async () => {
  await t?.stop();
});

describe('concurrent writers never lose an update nor share a port', () => {
  it(`creates ${SERVICES} services from ${CLIENTS} concurrent clients; all ready, all on the hub, ports distinct`, async () => {
    // Act
    const responses = await withClients(names, CLIENTS, (name) =>
      api.post<Service>('/api/v3/services', {
        name,
        type: 'external',
        resource: `${name}.backend.example.com`,
        targetPort: 443,
        tags: ['fleet'],
      }),
    );

    // Assess
    expect(responses.map((response) => response.status)).toEqual(names.map(() => 201));
    const ports = responses.map((response) => response.body.bridgePort);
    expect(new Set(ports).size).toBe(SERVICES);
    expect([...ports].sort((a, b) => a - b)).toEqual(Array.from({ length: SERVICES }, (_, i) => 10024 + i));
    await expect
      .poll(
        async () => (await listServices()).filter((service) => service.provisioningStatus === 'ready').length,
        poll,
      )
      .toBe(SERVICES);
    const hub = await hubConfig();
    expect(sortedKeys(hub.bridges?.tcpListeners)).toEqual(names.map((name) => `${name}-listener`));
    expect(sortedKeys(hub.bridges?.tcpConnectors)).toEqual(names.map((name) => `${name}-connector`));
    const hubPorts = Object.values(hub.bridges?.tcpListeners ?? {}).map((listener) => listener.port);
    expect(new Set(hubPorts).size).toBe(SERVICES);
    await expect
      .poll(async () => sortedKeys((await agentConfig()).bridges?.tcpListeners).length, poll)
      .toBe(SERVICES);
  });

  it('hands the freed bridge port to the next create', async () => {
    // Prepare
    const victim = (await api.get<Service>('/api/v3/services/svc-017')).body;

    // Act
    expect((await api.delete('/api/v3/services/svc-017')).status).toBe(204);
    const created = await api.post<Service>('/api/v3/services', {
      name: 'replacement',
      type: 'external',
      resource: 'replacement.backend.example.com',
      targetPort: 443,
    });

    // Assess
    expect(created.status).toBe(201);
    expect(created.body.bridgePort).toBe(victim.bridgePort);
    await expect
      .poll(
        async () => (await api.get<Service>('/api/v3/services/replacement')).body.provisioningStatus,
        poll,
      )
      .toBe('ready');
    const listener = (await hubConfig()).bridges?.tcpListeners?.['replacement-listener'];
    expect(listener).toEqual({
      name: 'replacement-listener',
      port: String(victim.bridgePort),
      address: 'replacement',
    });
    expect((await hubConfig()).bridges?.tcpListeners?.['svc-017-listener']).toBeUndefined();
  });

  it('leaves no orphan entry anywhere after concurrent deletes', async () => {
    // Prepare
    const doomed = names.filter((name, i) => i % 2 === 0 && name !== 'svc-017');
    const survivors = [
      ...names.filter((name) => !doomed.includes(name) && name !== 'svc-017'),
      'replacement',
    ].sort();

    // Act
    const statuses = await withClients(
      doomed,
      CLIENTS,
      async (name) => (await api.delete(`/api/v3/services/${name}`)).status,
    );

    // Assess
    expect(statuses).toEqual(doomed.map(() => 204));
    expect((await listServices()).map((service) => service.name)).toEqual(survivors);
    await expect
      .poll(async () => sortedKeys((await hubConfig()).bridges?.tcpListeners), poll)
      .toEqual(survivors.map((name) => `${name}-listener`));
    expect(sortedKeys((await hubConfig()).bridges?.tcpConnectors)).toEqual(
      survivors.map((name) => `${name}-connector`),
    );
    await expect
      .poll(async () => sortedKeys((await agentConfig()).bridges?.tcpListeners), poll)
      .toEqual(survivors.map((name) => `${name}-listener`));
  });

  it('lets one of 10 concurrent creates of one name win; the nine losers hand their ports back', async () => {
    // Prepare: the ten lowest ports no live service holds (the deletes above freed many)
    const held = new Set((await listServices()).map((service) => service.bridgePort));
    const free: number[] = [];
    for (let port = 10024; free.length < 10; port++) if (!held.has(port)) free.push(port);
    const body = (name: string) => ({
      name,
      type: 'external',
      resource: `${name}.backend.example.com`,
      targetPort: 443,
    });

    // Act
    const race = await Promise.all(
      Array.from({ length: 10 }, () => api.post<Service>('/api/v3/services', body('contested'))),
    );
    const after: Service[] = [];
    for (let i = 0; i < 9; i++)
      after.push((await api.post<Service>('/api/v3/services', body(`after-${i}`))).body);

    // Assess: one 201, nine 409s; the winner's port and the next nine creates' are exactly the ten
    // lowest free ports (a loser that kept its claim would push a later create past them)
    const winners = race.filter((response) => response.status === 201);
    expect(winners).toHaveLength(1);
    const losers = race.filter((response) => response.status !== 201);
    expect(losers.map((response) => [response.status, response.body])).toEqual(
      Array.from({ length: 9 }, () => [
        409,
        { name: 'ConflictError', message: 'Service with name contested already exists' },
      ]),
    );
    const given = [winners[0]!.body.bridgePort, ...after.map((service) => service.bridgePort)];
    expect([...given].sort((a, b) => a - b)).toEqual(free);
    expect((await api.get<Service>('/api/v3/services/contested')).body.bridgePort).toBe(
      winners[0]!.body.bridgePort,
    );
  });
});

describe('races on the fabric leave nothing dangling', () => {
  type Item = Record<string, unknown> & { PK: string; SK: string };
  type Agent = { uuid: string; name: string };

  /** Every item of the runtime's table, read with a client of the test's own. */
  async function storeItems(): Promise<Item[]> {
    const table = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: t.runtime.dynamodbEndpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      }),
    );
    try {
      const items: Item[] = [];
      let ExclusiveStartKey: Record<string, unknown> | undefined;
      do {
        const page = await table.send(new ScanCommand({ TableName: 'fogbridge', ExclusiveStartKey }));
        items.push(...((page.Items ?? []) as Item[]));
        ExclusiveStartKey = page.LastEvaluatedKey;
      } while (ExclusiveStartKey);
      return items;
    } finally {
      table.destroy();
    }
  }

  /**
   * What the store holds that it should not: references to agents that are gone, and certificates,
   * NATS instances and router configs of agents that are gone; and the agents whose router config is not
   * one a Router can run.
   */
  async function danglingInStore(): Promise<string[]> {
    const items = await storeItems();
    const agents = new Map(
      items
        .filter((item) => item.SK === 'AGENT' && item.PK.startsWith('AGENT#'))
        .map((item) => [item.uuid as string, item]),
    );
    const problems: string[] = [];
    for (const agent of agents.values()) {
      for (const server of (agent.upstreamNatsServers as string[] | undefined) ?? []) {
        if (server !== 'default-nats-hub' && !agents.has(server))
          problems.push(`${agent.name} links to NATS server ${server}, which is gone`);
      }
      for (const router of agent.upstreamRouters as string[]) {
        if (router !== 'default-router' && !agents.has(router))
          problems.push(`${agent.name} links to router ${router}, which is gone`);
      }
    }
    for (const item of items) {
      const owner = item.agentUuid as string | undefined;
      if (item.PK.startsWith('CERT#') && owner && !agents.has(owner))
        problems.push(`certificate ${item.name} of gone agent ${owner}`);
      if (item.PK.startsWith('NATSINSTANCE#') && !agents.has(item.agentUuid as string))
        problems.push(`NATS instance of gone agent ${item.agentUuid}`);
      if (item.PK.startsWith('ROUTERCFG#') && item.SK === 'CFG') {
        const key = item.PK.slice('ROUTERCFG#'.length);
        const agent = agents.get(key);
        if (key !== 'default-router' && !agent) problems.push(`router config of gone agent ${key}`);
        const config = item.config as {
          metadata?: { id?: string };
          listeners?: Record<string, { port: number }>;
        };
        if (agent && agent.routerMode !== 'none') {
          if (config.metadata?.id !== key) problems.push(`router config of ${agent.name} names no identity`);
          if (!Object.values(config.listeners ?? {}).some((listener) => listener.port === 5672))
            problems.push(`router config of ${agent.name} has no management listener`);
        }
      }
    }
    return problems;
  }

  /**
   * Until every agent's fabric is made and every reconcile asked of the agents, and of the deleted ones
   * (`gone`), has run.
   */
  async function settled(gone: readonly string[]): Promise<void> {
    await fabricSettled(api);
    const agents = (await api.get<{ fogs: Agent[] }>('/api/v3/iofog-list')).body.fogs;
    await routersQuiescent(t, [...agents.map((agent) => agent.uuid), ...gone]);
  }

  it('deleting a NATS server while a leaf naming it is created, 20 times: never both, never a dangling link', async () => {
    // Prepare
    const outcomes: string[] = [];
    const gone: string[] = [];

    for (let round = 0; round < 20; round++) {
      const server = await api.post<{ uuid: string }>('/api/v3/iofog', {
        name: `nats-server-${round}`,
        host: `10.8.0.${round + 1}`,
        routerMode: 'none',
        natsMode: 'server',
      });
      expect(server.status).toBe(201);
      gone.push(server.body.uuid);

      // Act
      const [deleted, leaf] = await Promise.all([
        api.delete(`/api/v3/iofog/${server.body.uuid}`),
        api.post<{ uuid: string }>('/api/v3/iofog', {
          name: `nats-leaf-${round}`,
          routerMode: 'none',
          natsMode: 'leaf',
          upstreamNatsServers: [server.body.uuid],
        }),
      ]);

      // Assess: the leaf exists only with its server, the server is gone only without a leaf
      outcomes.push(`${deleted.status}/${leaf.status}`);
      expect([`204/400`, `409/201`]).toContain(`${deleted.status}/${leaf.status}`);
      if (leaf.status === 201) {
        gone.push(leaf.body.uuid);
        expect((await api.get(`/api/v3/iofog/${server.body.uuid}`)).status).toBe(200);
        expect((await api.delete(`/api/v3/iofog/${leaf.body.uuid}`)).status).toBe(204);
      } else {
        expect(leaf.body).toEqual({
          name: 'ValidationError',
          message: `Field 'upstreamNatsServers': ${JSON.stringify(server.body.uuid)} is not a NATS server (an agent with natsMode server, or default-nats-hub)`,
        });
      }
      const left = await api.delete(`/api/v3/iofog/${server.body.uuid}`);
      expect([204, 404]).toContain(left.status);
    }
    await settled(gone);
    expect(await danglingInStore()).toEqual([]);
    expect(outcomes).toHaveLength(20);
  });

  it('deleting an interior agent while another agent is changed to link to it, 20 times: never both', async () => {
    // Prepare
    const outcomes: string[] = [];
    const gone: string[] = [];
    const edge = await api.post<{ uuid: string }>('/api/v3/iofog', {
      name: 'edge-linker',
      host: '10.12.0.1',
    });
    expect(edge.status).toBe(201);

    for (let round = 0; round < 20; round++) {
      const interior = await api.post<{ uuid: string }>('/api/v3/iofog', {
        name: `interior-${round}`,
        host: `10.12.1.${round + 1}`,
        routerMode: 'interior',
        natsMode: 'none',
      });
      expect(interior.status).toBe(201);
      gone.push(interior.body.uuid);

      // Act
      const [deleted, patched] = await Promise.all([
        api.delete(`/api/v3/iofog/${interior.body.uuid}`),
        api.patch(`/api/v3/iofog/${edge.body.uuid}`, { upstreamRouters: [interior.body.uuid] }),
      ]);

      // Assess: the link exists only with its upstream, the upstream is gone only without a link
      outcomes.push(`${deleted.status}/${patched.status}`);
      expect(['204/400', '409/204']).toContain(`${deleted.status}/${patched.status}`);
      const linked = (await api.get<{ upstreamRouters: string[] }>(`/api/v3/iofog/${edge.body.uuid}`)).body
        .upstreamRouters;
      if (patched.status === 204) {
        expect(linked).toEqual([interior.body.uuid]);
        expect((deleted.body as { message: string }).message).toBe(
          `Agent interior-${round} is the upstream router of edge-linker`,
        );
        expect(
          (await api.patch(`/api/v3/iofog/${edge.body.uuid}`, { upstreamRouters: ['default-router'] }))
            .status,
        ).toBe(204);
      } else {
        expect(linked).not.toContain(interior.body.uuid);
        expect((patched.body as { message: string }).message).toMatch(/^Field 'upstreamRouters': /);
      }
      const left = await api.delete(`/api/v3/iofog/${interior.body.uuid}`);
      expect([204, 404]).toContain(left.status);
    }
    await settled(gone);
    expect(await danglingInStore()).toEqual([]);
    expect(outcomes).toHaveLength(20);
  });

  it('deleting an agent while it is being changed, 20 times: nothing of it stays', async () => {
    const gone: string[] = [];
    for (let round = 0; round < 20; round++) {
      // Prepare
      const agent = await api.post<{ uuid: string }>('/api/v3/iofog', {
        name: `changing-${round}`,
        host: `10.9.0.${round + 1}`,
      });
      expect(agent.status).toBe(201);
      gone.push(agent.body.uuid);

      // Act
      const [deleted, changed] = await Promise.all([
        api.delete(`/api/v3/iofog/${agent.body.uuid}`),
        api.patch(`/api/v3/iofog/${agent.body.uuid}`, { host: `10.9.1.${round + 1}`, tags: ['x'] }),
      ]);

      // Assess
      expect(deleted.status).toBe(204);
      expect([204, 404]).toContain(changed.status);
    }
    await settled(gone);
    expect(await danglingInStore()).toEqual([]);
  });

  it('creates 50 agents and deletes them all at once: nothing of them stays, the others are whole', async () => {
    // Prepare
    const created = await withClients(
      Array.from({ length: 50 }, (_, i) => i),
      CLIENTS,
      (i) => api.post<{ uuid: string }>('/api/v3/iofog', { name: `burst-${i}`, host: `10.10.0.${i + 1}` }),
    );
    expect(created.map((response) => response.status)).toEqual(created.map(() => 201));

    // Act
    const deleted = await withClients(
      created,
      CLIENTS,
      async (response) => (await api.delete(`/api/v3/iofog/${response.body.uuid}`)).status,
    );

    // Assess
    expect(deleted).toEqual(created.map(() => 204));
    await settled(created.map((response) => response.body.uuid));
    expect(await danglingInStore()).toEqual([]);
  });

  it('takes ten concurrent PUT /api/v3/router with different hosts: every one 200, the last one stands', async () => {
    // Act
    const hosts = Array.from({ length: 10 }, (_, i) => `hub-${i}.example.com`);
    const answers = await Promise.all(hosts.map((host) => api.put('/api/v3/router', { host })));

    // Assess
    expect(answers.map((answer) => answer.status)).toEqual(hosts.map(() => 200));
    const stored = (await api.get<{ host: string }>('/api/v3/router')).body.host;
    expect(hosts).toContain(stored);
    // Every service re-derives its endpoint from the host that stood.
    await expect
      .poll(async () => {
        const services = await listServices();
        return services.every(
          (service) =>
            service.provisioningStatus === 'ready' &&
            (service as Service & { serviceEndpoint: string }).serviceEndpoint === stored,
        );
      }, poll)
      .toBe(true);
  });

  it('lets one of 20 concurrent creates of one agent name win, and its router config is whole', async () => {
    // Act
    const race = await Promise.all(
      Array.from({ length: 20 }, () =>
        api.post<{ uuid: string }>('/api/v3/iofog', { name: 'contested-agent', host: '10.11.0.1' }),
      ),
    );

    const winner = race.find((response) => response.status === 201)!;
    const read = await api.get<{ metadata?: { id: string; mode: string } }>(
      `/api/v3/iofog/${winner.body.uuid}/router-config`,
    );

    // Assess: read at once, the winner's router config is whole or said to be in the making
    expect(race.filter((response) => response.status === 201)).toHaveLength(1);
    expect(race.filter((response) => response.status === 409)).toHaveLength(19);
    if (read.status === 200)
      expect(read.body.metadata).toEqual(expect.objectContaining({ id: winner.body.uuid }));
    else
      expect(read.body).toEqual({
        name: 'ConflictError',
        message: expect.stringMatching(/^The router config of agent contested-agent is being built \(/),
      });
    await settled([]);
    const settledRead = await api.get<{ metadata: { id: string; mode: string } }>(
      `/api/v3/iofog/${winner.body.uuid}/router-config`,
    );
    expect(settledRead.body.metadata).toMatchObject({ id: winner.body.uuid, mode: 'edge' });
    expect(await danglingInStore()).toEqual([]);
  });
});
