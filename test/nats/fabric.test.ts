import { copyFile, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createUser, decode } from '@nats-io/jwt';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCertificateAuthority, issueCertificate } from '../../shared/domain/pki.js';
import { type ApiClient, eventually } from '../support/client.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';
import type { ParsedMicroservice, ScriptedAgent } from '../support/scripted-agent.js';
import { declareNatsAgent, type NatsPorts } from './agents.js';
import { ensureNatsServerBinary, type NatsServerProcess, startNatsServer } from './harness.js';

/**
 * The NATS fabric on real nats-server processes (built from the Go module, test/nats/harness.ts), started
 * from exactly the files fogbridge hands three agents through the Edgelet routes: the system agent (the
 * hub), a second server and a leaf, on loopback addresses 127.0.0.2-4. The only changes made to those
 * files are the ones a container's file system makes: container paths are mapped into a temp folder, and
 * the JWT directory mounted at /tmp/nats/jwt is copied where the resolver reads it, as the NATS image does
 * when it starts. Ports are free ones, given to the agents through the API.
 */
const poll = { timeout: 90_000, interval: 250 };
let t: TestRuntime;
let api: ApiClient;
let binary: string;
let root: string;
const servers = new Map<string, NatsServerProcess>();
const clients: NatsConnection[] = [];

interface NatsAgent {
  name: string;
  host: string;
  mode: 'server' | 'leaf';
  ports: NatsPorts;
  uuid: string;
  edgelet: ScriptedAgent;
  microservice: ParsedMicroservice;
  files: Map<string, string>;
}
const agents = new Map<string, NatsAgent>();
const agent = (name: string) => agents.get(name)!;

async function declare(name: string, host: string, mode: 'server' | 'leaf'): Promise<void> {
  const { uuid, ports, edgelet } = await declareNatsAgent(api, t.runtime.url, { name, host, mode });
  agents.set(name, { name, host, mode, ports, uuid, edgelet, microservice: undefined!, files: new Map() });
}

/** What the agent's Edgelet holds for its NATS container now: the microservice and its mounted files. */
async function pull(name: string): Promise<NatsAgent> {
  const entry = agent(name);
  const list = await entry.edgelet.loadMicroservices();
  await entry.edgelet.loadVolumeMounts();
  const microservice = list.find((item) => item.isNats);
  if (microservice) Object.assign(entry, { microservice, files: entry.edgelet.containerFiles(microservice) });
  return entry;
}

const serverConf = (entry: NatsAgent) => entry.files.get('/etc/nats/config/server.conf') ?? '';

/** The container's paths, inside `folder` (a container's root file system). */
const inFolder = (folder: string, text: string) =>
  text.replace(
    /(["\s])(\/etc\/nats\/|\/home\/runner\/)/g,
    (_match, before: string, path: string) => `${before}${folder}${path}`,
  );

/**
 * Lays out the container's file system for `entry` under `folder` (every mounted file at its container
 * path, the JWT directory copied to the resolver's), optionally altered, and starts nats-server on it.
 */
async function startContainer(
  entry: NatsAgent,
  folder: string,
  alter: (files: Map<string, string>) => void = () => undefined,
): Promise<NatsServerProcess> {
  const files = new Map(entry.files);
  alter(files);
  for (const [path, content] of files) {
    await mkdir(dirname(join(folder, path)), { recursive: true });
    await writeFile(join(folder, path), path.endsWith('server.conf') ? inFolder(folder, content) : content);
  }
  const jwtMount = join(folder, '/tmp/nats/jwt');
  const resolverDir = join(folder, '/home/runner/nats/jwt');
  await mkdir(resolverDir, { recursive: true });
  for (const file of await readdir(jwtMount)) await copyFile(join(jwtMount, file), join(resolverDir, file));
  for (const dir of ['/home/runner/data', '/home/runner/run'])
    await mkdir(join(folder, dir), { recursive: true });
  return startNatsServer(
    binary,
    join(folder, '/etc/nats/config/server.conf'),
    entry.ports.httpPort,
    join(folder, 'nats.log'),
  );
}

const credsOf = (entry: NatsAgent) =>
  entry.files.get(entry.microservice.env.find((item) => item.key === 'NATS_SYS_USER_CRED_PATH')!.value)!;

async function client(entry: NatsAgent): Promise<NatsConnection> {
  const connection = await connect({
    servers: `127.0.0.1:${entry.ports.serverPort}`,
    authenticator: credsAuthenticator(new TextEncoder().encode(credsOf(entry))),
  });
  clients.push(connection);
  return connection;
}

const leafNames = async (server: NatsServerProcess) =>
  ((await server.monitor<{ leafs?: { name: string; account: string }[] }>('/leafz')).leafs ?? []).map(
    (leaf) => leaf.name,
  );

beforeAll(async () => {
  binary = await ensureNatsServerBinary();
  root = await mkdtemp(join(tmpdir(), 'fogbridge-nats-'));
  t = await startTestRuntime();
  api = t.api;
  // The first agent of a remote control plane is the system agent: its NATS server is the hub.
  await declare('hub', '127.0.0.2', 'server');
  await declare('fog-s', '127.0.0.3', 'server');
  await declare('fog-l', '127.0.0.4', 'leaf');
  for (const name of agents.keys()) {
    await eventually(
      async () => {
        const view = await api.get<{ platformStatus: { phase: string } }>(
          `/api/v3/iofog/${agent(name).uuid}`,
        );
        return view.body.platformStatus.phase === 'ready' ? true : undefined;
      },
      `${name}'s fabric to be ready`,
      90_000,
    );
  }
  // Both servers route to both (the second server's arrival re-renders the hub's file).
  const secondRoute = `"nats://127.0.0.3:${agent('fog-s').ports.clusterPort}"`;
  for (const name of ['hub', 'fog-s']) {
    await eventually(
      async () => (serverConf(await pull(name)).includes(secondRoute) ? true : undefined),
      `${name}'s server.conf to route to fog-s`,
      90_000,
    );
  }
  await pull('fog-l');
  for (const name of ['hub', 'fog-s', 'fog-l']) {
    servers.set(name, await startContainer(agent(name), join(root, name)));
  }
}, 600_000);

afterAll(async () => {
  for (const connection of clients) await connection.close().catch(() => undefined);
  for (const server of servers.values()) await server.stop();
  await t?.stop();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('the files fogbridge delivers run a NATS fabric', () => {
  it('renders the cluster template for the servers and the leaf template for the leaf, with nothing left to fill', () => {
    // Assess
    expect(serverConf(agent('hub'))).toContain('cluster: {');
    expect(serverConf(agent('fog-s'))).toContain('cluster: {');
    expect(serverConf(agent('fog-l'))).toContain('remotes: [');
    for (const name of agents.keys()) expect(serverConf(agent(name))).not.toMatch(/\$[A-Z]/);
  });

  it('routes the two servers to each other over verified TLS', async () => {
    // Act / Assess
    for (const [name, other] of [
      ['hub', 'fog-s'],
      ['fog-s', 'hub'],
    ] as const) {
      await expect
        .poll(
          async () =>
            (
              (await servers.get(name)!.monitor<{ routes?: { remote_name: string }[] }>('/routez')).routes ??
              []
            ).map((route) => route.remote_name),
          poll,
        )
        .toContain(other);
      const varz = await servers
        .get(name)!
        .monitor<{ cluster: { tls_required: boolean; tls_verify: boolean } }>('/varz');
      expect(varz.cluster).toMatchObject({ tls_required: true, tls_verify: true });
    }
  });

  it('links the leaf to the hub in the system account', async () => {
    // Act / Assess
    await expect.poll(() => leafNames(servers.get('hub')!), poll).toContain('fog-l');
    const leafz = await servers.get('hub')!.monitor<{ leafs: { name: string; account: string }[] }>('/leafz');
    const systemAccount = (await servers.get('hub')!.monitor<{ system_account: string }>('/varz'))
      .system_account;
    expect(leafz.leafs.find((leaf) => leaf.name === 'fog-l')!.account).toBe(systemAccount);
    expect(await leafNames(servers.get('fog-l')!)).toEqual(['hub']);
  });

  it('resolves the system account from the JWT bundle, issued by the operator in server.conf', async () => {
    // Prepare
    const operatorJwt = /^operator = (\S+)$/m.exec(serverConf(agent('hub')))![1]!;
    const operator = decode(operatorJwt);

    // Act / Assess
    for (const name of agents.keys()) {
      const server = servers.get(name)!;
      const { system_account: systemAccount } = await server.monitor<{ system_account: string }>('/varz');
      const accountz = await server.monitor<{
        account_detail: { is_system: boolean; issuer_key: string; jwt: string };
      }>(`/accountz?acc=${systemAccount}`);
      expect(accountz.account_detail).toMatchObject({ is_system: true, issuer_key: operator.sub });
      expect(decode(accountz.account_detail.jwt).name).toBe('SYS');
    }
  });

  it('carries a message published on the leaf to a subscriber on the hub', async () => {
    // Prepare
    const [hubClient, leafClient] = [await client(agent('hub')), await client(agent('fog-l'))];
    const received: string[] = [];
    const subscription = hubClient.subscribe('fogbridge.check');
    void (async () => {
      for await (const message of subscription) received.push(message.string());
    })();
    await hubClient.flush();

    // Act: published until the hub's interest has reached the leaf
    await expect
      .poll(async () => {
        leafClient.publish('fogbridge.check', 'from the leaf');
        await leafClient.flush();
        return received;
      }, poll)
      .toContain('from the leaf');
  });
});

describe('a tampered file breaks the leaf link', () => {
  beforeAll(async () => {
    await servers.get('fog-l')!.stop();
    servers.delete('fog-l');
    await eventually(
      async () => ((await leafNames(servers.get('hub')!)).includes('fog-l') ? undefined : true),
      'the hub to drop the stopped leaf',
    );
  });

  it('refuses a leaf certificate signed by another CA', async () => {
    // Prepare
    const leaf = agent('fog-l');
    const stranger = await createCertificateAuthority('nats-site-ca');
    const forged = await issueCertificate(stranger, { commonName: 'nats-server-fog-l', hosts: [leaf.host] });

    const hubLogBefore = servers.get('hub')!.log().length;

    // Act
    const server = await startContainer(leaf, join(root, 'fog-l-forged-cert'), (files) => {
      files.set('/etc/nats/certs/nats-server-fog-l/tls.crt', forged.certPem);
      files.set('/etc/nats/certs/nats-server-fog-l/tls.key', forged.keyPem);
    });

    // Assess: the hub refuses the handshake (it verifies leaf certificates against nats-site-ca), the
    // leaf sees its link closed, and the hub never lists it
    try {
      await expect
        .poll(() => servers.get('hub')!.log().slice(hubLogBefore), poll)
        .toMatch(/[\d.]+:\d+ - lid:\d+ - TLS leafnode handshake error[^\n]*certificate/i);
      await expect.poll(() => server.log(), poll).toMatch(/Leafnode connection closed/);
      expect(await leafNames(servers.get('hub')!)).not.toContain('fog-l');
    } finally {
      await server.stop();
    }
  });

  it('refuses creds whose seed is not the user of the JWT', async () => {
    // Prepare
    const leaf = agent('fog-l');
    const path = leaf.microservice.env.find((item) => item.key === 'NATS_SYS_USER_CRED_PATH')!.value;
    const otherSeed = new TextDecoder().decode(createUser().getSeed());

    // Act
    const server = await startContainer(leaf, join(root, 'fog-l-forged-creds'), (files) => {
      files.set(path, files.get(path)!.replace(/^SU[A-Z2-7]+$/m, otherSeed));
    });

    // Assess
    try {
      await expect.poll(() => server.log(), poll).toMatch(/Leafnode Error .Authorization Violation./i);
      expect(await leafNames(servers.get('hub')!)).not.toContain('fog-l');
    } finally {
      await server.stop();
    }
  });
});
