import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHub } from '../fixtures/world.js';
import type { ApiClient } from '../support/client.js';
import { withClients } from '../support/processes.js';
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
