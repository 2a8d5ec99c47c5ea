import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decode } from '@nats-io/jwt';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiClient, eventually } from '../support/client.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';
import type { ScriptedAgent } from '../support/scripted-agent.js';
import { declareNatsAgent, type NatsPorts } from './agents.js';
import { ensureNatsServerBinary } from './harness.js';
import { NatsContainer } from './nats-container.js';

/**
 * Applications on the NATS fabric, on real nats-server processes: the hub (the system agent's server)
 * and two leaf agents, each run as its NATS container runs (test/nats/nats-container.ts) from exactly
 * the files fogbridge hands its Edgelet. Microservices connect with the creds file their own mount
 * carries, at the path their environment names.
 */
const LONG = 120_000;
let t: TestRuntime;
let api: ApiClient;
let binary: string;
let root: string;
const clients: NatsConnection[] = [];

interface NatsAgent {
  name: string;
  uuid: string;
  ports: NatsPorts;
  edgelet: ScriptedAgent;
  container: NatsContainer;
}
const agents = new Map<string, NatsAgent>();
const agent = (name: string) => agents.get(name)!;

async function declare(name: string, host: string, mode: 'server' | 'leaf'): Promise<void> {
  const { uuid, ports, edgelet } = await declareNatsAgent(api, t.runtime.url, { name, host, mode });
  const container = new NatsContainer(binary, edgelet, join(root, name), ports);
  agents.set(name, { name, uuid, ports, edgelet, container });
}

/** One changes tick of every agent's Edgelet, then its NATS container applies what it got. */
async function tick(): Promise<void> {
  for (const entry of agents.values()) {
    await entry.edgelet.poll();
    if (entry.edgelet.microservices.some((item) => item.isNats)) await entry.container.apply();
  }
}

/** Ticks until `check` holds (returns something), as agents polling every few seconds would. */
async function settle<T>(check: () => Promise<T | undefined>, what: string): Promise<T> {
  return eventually(
    async () => {
      await tick();
      return check();
    },
    what,
    LONG,
  );
}

/** The creds file a microservice's container reads at `NATS_CREDS_PATH`, through its mount. */
function credsOf(agentName: string, microservice: string): string | undefined {
  const { edgelet } = agent(agentName);
  const item = edgelet.microservices.find((candidate) => candidate.name === microservice);
  const path = item?.env.find((entry) => entry.key === 'NATS_CREDS_PATH')?.value;
  return item && path ? edgelet.containerFile(item, path) : undefined;
}

async function connectAs(agentName: string, creds: string): Promise<NatsConnection> {
  const connection = await connect({
    servers: `127.0.0.1:${agent(agentName).ports.serverPort}`,
    authenticator: credsAuthenticator(new TextEncoder().encode(creds)),
    reconnect: false,
    timeout: 5_000,
  });
  clients.push(connection);
  return connection;
}

/** Why a connection with these creds is refused (undefined: it is accepted). */
async function refusal(agentName: string, creds: string): Promise<string | undefined> {
  // A leaf restarts its process when its creds or accounts change: a connection refused while it comes
  // back up says nothing about the creds, so that is tried again (for up to 20 s).
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const connection = await connectAs(agentName, creds);
      await connection.flush();
      await connection.close();
      return undefined;
    } catch (error) {
      const message = (error as Error).message;
      if (!/connection refused/i.test(message) || Date.now() > deadline) return message;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/** Messages on `subject` reach `to` from `from`, published until they do (interest crosses leaf links). */
async function delivered(from: NatsConnection, to: NatsConnection, subject: string): Promise<boolean> {
  const received: string[] = [];
  const subscription = to.subscribe(subject);
  void (async () => {
    for await (const message of subscription) received.push(message.string());
  })();
  await to.flush();
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline && received.length === 0) {
    from.publish(subject, 'hello');
    await from.flush();
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  subscription.unsubscribe();
  return received.length > 0;
}

const microservice = (name: string, application: string, agentName: string, natsRule?: string) => ({
  name,
  application,
  agentName,
  images: [{ containerImage: 'example/app:1', fogTypeId: 1 }],
  natsConfig: { natsAccess: true, ...(natsRule ? { natsRule } : {}) },
});

async function accountKey(application: string): Promise<string> {
  const response = await api.get<{ publicKey: string }>(`/api/v3/nats/accounts/${application}`);
  expect(response.status, response.text).toBe(200);
  return response.body.publicKey;
}

/** The account keys of the remotes a leaf's running config links. */
const linkedAccounts = (name: string) =>
  agent(name)
    .container.process.monitor<{ leafs?: { account: string }[] }>('/leafz')
    .then((leafz) => (leafz.leafs ?? []).map((leaf) => leaf.account));

beforeAll(async () => {
  binary = await ensureNatsServerBinary();
  root = await mkdtemp(join(tmpdir(), 'fogbridge-nats-apps-'));
  t = await startTestRuntime();
  api = t.api;
  await declare('hub', '127.0.0.2', 'server');
  await declare('leaf-1', '127.0.0.3', 'leaf');
  await declare('leaf-2', '127.0.0.4', 'leaf');
  // Orders: a1 and a3 on leaf-1, a2 on leaf-2; payments: b1 on leaf-1, beside orders.
  expect(
    (await api.post('/api/v3/application', { name: 'orders', natsConfig: { natsAccess: true } })).status,
  ).toBe(201);
  expect(
    (await api.post('/api/v3/application', { name: 'payments', natsConfig: { natsAccess: true } })).status,
  ).toBe(201);
  for (const [name, application, agentName] of [
    ['a1', 'orders', 'leaf-1'],
    ['a3', 'orders', 'leaf-1'],
    ['a2', 'orders', 'leaf-2'],
    ['b1', 'payments', 'leaf-1'],
  ] as const) {
    const created = await api.post('/api/v3/microservices', microservice(name, application, agentName));
    expect(created.status, created.text).toBe(201);
  }
  const [orders, payments] = [await accountKey('orders'), await accountKey('payments')];
  await settle(async () => {
    const [one, two] = [await linkedAccounts('leaf-1'), await linkedAccounts('leaf-2')];
    return one.includes(orders) && one.includes(payments) && two.includes(orders) ? true : undefined;
  }, 'both leaves to link into the application accounts they serve');
}, 600_000);

afterAll(async () => {
  for (const connection of clients) await connection.close().catch(() => undefined);
  for (const entry of agents.values()) await entry.container.stop();
  await t?.stop();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('microservices of one application on two leaves', () => {
  it('exchange messages through the hub with the creds their mounts carry', async () => {
    // Prepare
    const [a1, a2] = [
      await connectAs('leaf-1', credsOf('leaf-1', 'a1')!),
      await connectAs('leaf-2', credsOf('leaf-2', 'a2')!),
    ];

    // Act / Assess: both ways
    expect(await delivered(a1, a2, 'orders.created')).toBe(true);
    expect(await delivered(a2, a1, 'orders.shipped')).toBe(true);
  });

  it("keep another application's microservice from their subjects, on the same leaf", async () => {
    // Prepare
    const [a1, a3, b1] = [
      await connectAs('leaf-1', credsOf('leaf-1', 'a1')!),
      await connectAs('leaf-1', credsOf('leaf-1', 'a3')!),
      await connectAs('leaf-1', credsOf('leaf-1', 'b1')!),
    ];
    const seenByPayments: string[] = [];
    const spy = b1.subscribe('orders.>');
    void (async () => {
      for await (const message of spy) seenByPayments.push(message.subject);
    })();
    await b1.flush();

    // Act: orders publishes until its own subscriber on the same leaf has the message
    const delivery = await delivered(a1, a3, 'orders.created');
    await b1.flush();

    // Assess
    expect(delivery).toBe(true);
    expect(seenByPayments).toEqual([]);
  });

  it('hold creds whose user is signed by their application account', () => {
    // Act
    const jwt = /-----BEGIN NATS USER JWT-----\n(\S+)\n/.exec(credsOf('leaf-2', 'a2')!)![1]!;

    // Assess
    expect(decode<{ name: string; iss: string }>(jwt)).toMatchObject({ name: 'a2' });
  });
});

describe('a user rule', () => {
  it('is enforced by the server: a subject it denies cannot be subscribed to', async () => {
    // Prepare
    expect(
      (await api.post('/api/v3/nats/user-rules', { name: 'no-secrets', subDeny: ['secret.>'] })).status,
    ).toBe(201);
    const before = credsOf('leaf-2', 'a2')!;
    const uuid = (
      await api.get<{ microservices: { uuid: string; name: string }[] }>(
        '/api/v3/microservices?application=orders',
      )
    ).body.microservices.find((ms) => ms.name === 'a2')!.uuid;

    // Act
    const patched = await api.patch(`/api/v3/microservices/${uuid}`, {
      natsConfig: { natsRule: 'no-secrets' },
    });
    expect(patched.status, patched.text).toBe(204);
    const after = await settle(async () => {
      const creds = credsOf('leaf-2', 'a2');
      return creds && creds !== before && !(await refusal('leaf-2', creds)) ? creds : undefined;
    }, "a2's reissued creds to reach its mount and work");

    // Assess
    const a2 = await connectAs('leaf-2', after);
    const denied = a2.subscribe('secret.plans');
    await a2.flush().catch(() => undefined);
    const outcome = await Promise.race([
      denied.closed.then(
        (error) => String(error),
        (error: Error) => error.message,
      ),
      new Promise<string>((resolve) => setTimeout(() => resolve('still subscribed'), 5_000)),
    ]);
    expect(outcome).toMatch(/Permissions Violation for Subscription to "secret.plans"/);
    expect(await refusal('leaf-2', before)).toMatch(/Authorization Violation|revoked/i);
  });
});

describe('a deleted microservice', () => {
  it('has its creds refused at once, on its leaf and at the hub, without restarting either server', async () => {
    // Prepare
    const a1Creds = credsOf('leaf-1', 'a1')!;
    const starts = { leaf: agent('leaf-1').container.starts, hub: agent('hub').container.starts };
    const uuid = (
      await api.get<{ microservices: { uuid: string; name: string }[] }>(
        '/api/v3/microservices?application=orders',
      )
    ).body.microservices.find((ms) => ms.name === 'a1')!.uuid;

    // Act
    expect((await api.delete(`/api/v3/microservices/${uuid}`)).status).toBe(204);

    // Assess
    await settle(
      async () => ((await refusal('leaf-1', a1Creds)) ? true : undefined),
      "a1's creds to be refused on leaf-1",
    );
    expect(await refusal('hub', a1Creds)).toMatch(/Authorization Violation/);
    expect(agent('leaf-1').container.starts).toBe(starts.leaf);
    expect(agent('hub').container.starts).toBe(starts.hub);
    expect(credsOf('leaf-1', 'a1')).toBeUndefined();
    expect(await refusal('leaf-1', credsOf('leaf-1', 'a3')!)).toBeUndefined();
  });
});

describe('a new application account', () => {
  it('reaches the running hub without a restart: its user connects', async () => {
    // Prepare
    const starts = agent('hub').container.starts;

    // Act
    expect(
      (await api.post('/api/v3/application', { name: 'billing', natsConfig: { natsAccess: true } })).status,
    ).toBe(201);
    const user = await api.post<{ name: string }>('/api/v3/nats/accounts/billing/users', {
      name: 'reporter',
      expiresIn: 3600,
    });
    expect(user.status, user.text).toBe(201);
    const creds = Buffer.from(
      (await api.get<{ credsBase64: string }>('/api/v3/nats/accounts/billing/users/reporter/creds')).body
        .credsBase64,
      'base64',
    ).toString('utf8');

    // Assess
    await settle(
      async () => ((await refusal('hub', creds)) === undefined ? true : undefined),
      'billing/reporter to connect to the hub',
    );
    expect(agent('hub').container.starts).toBe(starts);
  });
});

describe('rotating the operator', () => {
  it('refuses every creds file issued before and lets the reissued ones work', async () => {
    // Prepare
    const before = { a2: credsOf('leaf-2', 'a2')!, a3: credsOf('leaf-1', 'a3')! };
    const operator = (await api.get<{ publicKey: string }>('/api/v3/nats/operator')).body.publicKey;

    // Act
    const rotated = await api.post<{ publicKey: string }>('/api/v3/nats/operator/rotate', {});
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.body.publicKey).not.toBe(operator);

    // Assess: the reissued creds connect, and orders flow between the leaves again
    await settle(async () => {
      const [a2Creds, a3Creds] = [credsOf('leaf-2', 'a2'), credsOf('leaf-1', 'a3')];
      if (!a2Creds || !a3Creds || a2Creds === before.a2 || a3Creds === before.a3) return undefined;
      const [a2, a3] = [await connectAs('leaf-2', a2Creds), await connectAs('leaf-1', a3Creds)];
      return (await delivered(a3, a2, 'orders.rotated')) ? true : undefined;
    }, 'orders to flow between the leaves with the reissued creds');
    expect(await refusal('leaf-2', before.a2)).toMatch(/Authorization Violation/);
    expect(await refusal('leaf-1', before.a3)).toMatch(/Authorization Violation/);
    expect(await refusal('hub', before.a2)).toMatch(/Authorization Violation/);
  });
});

describe("turning an application's NATS access off", () => {
  it('removes its account everywhere: its creds are refused, its leaf links are gone', async () => {
    // Prepare
    const creds = { a2: credsOf('leaf-2', 'a2')!, a3: credsOf('leaf-1', 'a3')! };
    const orders = await accountKey('orders');

    // Act
    const patched = await api.patch('/api/v3/application/orders', { natsConfig: { natsAccess: false } });
    expect(patched.status, patched.text).toBe(204);

    // Assess
    await settle(async () => {
      const links = [...(await linkedAccounts('leaf-1')), ...(await linkedAccounts('leaf-2'))];
      return links.includes(orders) ? undefined : true;
    }, 'no leaf to link into the orders account');
    for (const [name, file] of [
      ['leaf-2', creds.a2],
      ['leaf-1', creds.a3],
      ['hub', creds.a2],
    ] as const) {
      expect(await refusal(name, file)).toMatch(/Authorization Violation|maximum account active connections/);
    }
    expect(credsOf('leaf-2', 'a2')).toBeUndefined();
    expect((await api.get('/api/v3/nats/accounts/orders')).status).toBe(404);
    const listed = await api.get<{ accounts: { name: string }[] }>('/api/v3/nats/accounts');
    expect(listed.body.accounts.map((account) => account.name)).not.toContain('orders');
  });
});
