import type { ApiClient } from '../../test/support/client.js';
import { ScriptedAgent } from '../../test/support/scripted-agent.js';
import {
  callsPerOperation,
  createAgent,
  type Observer,
  percentile,
  type RuntimeControl,
  sleep,
  withClients,
} from '../support.js';

/**
 * S6 NATS accounts: the hub and two more NATS servers, each with a provisioned agent that polls as
 * Edgelet does (its changes every `--nats-poll-ms`, its volume mounts when told); then `--nats-apps`
 * applications are created with NATS access from `--clients` clients, each with `--nats-users` users
 * made through the API. Reports the time until every server's JWT directory (what its NATS container
 * copies into its resolver and pushes to its running server) holds every account, the store calls per
 * application create and per user, the largest item the table holds, and the size of a server's
 * volume mounts answer.
 */
export async function runNatsAccounts(
  api: ApiClient,
  observer: Observer,
  settings: { natsApps: number; natsUsers: number; natsPollMs: number; clients: number },
  control: RuntimeControl,
) {
  const servers = await startServers(api, settings.natsPollMs);
  await control.resetUsage();
  const started = Date.now();
  const createLatencies: number[] = [];
  await withClients(
    Array.from({ length: settings.natsApps }, (_, i) => i),
    settings.clients,
    async (i) => {
      const name = `s6-app-${String(i).padStart(5, '0')}`;
      const sent = Date.now();
      const created = await api.post('/api/v3/application', { name, natsConfig: { natsAccess: true } });
      createLatencies.push(Date.now() - sent);
      if (created.status !== 201) throw new Error(`S6 application: ${created.status} ${created.text}`);
    },
  );
  const createdMs = Date.now() - started;
  const held = await waitForDirectories(servers, settings.natsApps + 1, started);
  const appUsage = await control.usage();
  await control.resetUsage();
  const usersStarted = Date.now();
  await withClients(
    Array.from({ length: settings.natsApps * settings.natsUsers }, (_, i) => i),
    settings.clients,
    async (i) => {
      const app = `s6-app-${String(Math.floor(i / settings.natsUsers)).padStart(5, '0')}`;
      const user = await api.post(`/api/v3/nats/accounts/${app}/users`, {
        name: `user-${i % settings.natsUsers}`,
      });
      if (user.status !== 201) throw new Error(`S6 user: ${user.status} ${user.text}`);
    },
  );
  const usersMs = Date.now() - usersStarted;
  const userUsage = await control.usage();
  const largest = await observer.largestItem();
  for (const server of servers) server.stop = true;
  const result = {
    applications: settings.natsApps,
    users: settings.natsApps * settings.natsUsers,
    createdMs,
    createP50Ms: percentile(createLatencies, 50),
    createP99Ms: percentile(createLatencies, 99),
    everyServerHoldsAllMs: held.all,
    perServerMs: held.perServer,
    callsPerApplication: callsPerOperation(appUsage)['POST /api/v3/application'],
    usersMs,
    callsPerUser: callsPerOperation(userUsage)['POST /api/v3/nats/accounts/{appName}/users'],
    largestItem: largest,
    hubVolumeMountsBytes: JSON.stringify({ volumeMounts: await servers[0]!.agent.loadVolumeMounts() }).length,
  };
  console.log('\nS6 NATS accounts');
  console.table({
    'applications / users': `${result.applications} / ${result.users}`,
    'created in (ms), create p50 / p99': `${createdMs}, ${result.createP50Ms} / ${result.createP99Ms}`,
    'every server holds every account after (ms)': result.everyServerHoldsAllMs,
    'store calls per application create (mean / in sequence)': `${result.callsPerApplication?.mean} / ${result.callsPerApplication?.sequentialMean}`,
    'store calls per user create (mean / in sequence)': `${result.callsPerUser?.mean ?? '-'} / ${result.callsPerUser?.sequentialMean ?? '-'}`,
    'largest item (bytes)': `${largest.bytes} (${largest.key})`,
    "the hub's volume mounts answer (bytes)": result.hubVolumeMountsBytes,
  });
  return result;
}

interface PollingServer {
  uuid: string;
  agent: ScriptedAgent;
  stop: boolean;
  /** Accounts its JWT directory holds, as its Edgelet last wrote it. */
  held: () => number;
}

/** The hub and two servers, provisioned, each polled as Edgelet would until `stop`. */
async function startServers(api: ApiClient, pollMs: number): Promise<PollingServer[]> {
  const names = [
    ['s6-hub', '10.60.0.1'],
    ['s6-server-1', '10.60.0.2'],
    ['s6-server-2', '10.60.0.3'],
  ];
  const servers: PollingServer[] = [];
  for (const [name, host] of names) {
    const uuid = await createAgent(api, { name, host, natsMode: 'server', routerMode: 'interior' });
    const key = await api.get<{ key: string }>(`/api/v3/iofog/${uuid}/provisioning-key`);
    const agent = new ScriptedAgent(api.baseUrl);
    await agent.provision(key.body.key, 1);
    const server: PollingServer = {
      uuid,
      agent,
      stop: false,
      held: () => {
        const directory = [...agent.mounted.values()].find((mount) => mount.name.startsWith('nats-jwt-dir-'));
        return directory ? Object.keys(directory.files).filter((file) => file.endsWith('.jwt')).length : 0;
      },
    };
    void (async () => {
      while (!server.stop) {
        await agent.poll().catch(() => undefined);
        await sleep(pollMs);
      }
    })();
    servers.push(server);
  }
  return servers;
}

async function waitForDirectories(servers: PollingServer[], wanted: number, started: number) {
  const perServer: Record<string, number> = {};
  const deadline = Date.now() + 3_600_000;
  while (Object.keys(perServer).length < servers.length) {
    if (Date.now() > deadline) throw new Error('S6: a server never held every account');
    for (const server of servers) {
      if (perServer[server.uuid] === undefined && server.held() >= wanted)
        perServer[server.uuid] = Date.now() - started;
    }
    await sleep(100);
  }
  return { all: Math.max(...Object.values(perServer)), perServer: Object.values(perServer) };
}
