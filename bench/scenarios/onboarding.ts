import type { ApiClient } from '../../test/support/client.js';
import { callsPerOperation, percentile, type RuntimeControl, sleep, withClients } from '../support.js';

/**
 * S7 onboarding: a burst of `--onboard-agents` agents created from `--clients` clients (1,000 / 20), each
 * with a router and NATS leaf (four certificates: router site and local server, NATS server and MQTT
 * server). Measured: the creates' API latency, and the time from the first create until every agent's
 * platform is ready (its certificates and NATS files made, its first router config written): agents
 * onboarded a second.
 * Against another fogbridge (`--url`) only through its API: no call counts.
 */
export async function runOnboarding(
  api: ApiClient,
  settings: { onboardAgents: number; clients: number },
  control?: RuntimeControl,
) {
  const hub = await api.post<{ uuid: string }>('/api/v3/iofog', {
    name: 'onboard-hub',
    host: 'hub.example.com',
  });
  if (hub.status !== 201) throw new Error(`S7 hub: ${hub.status} ${hub.text}`);
  await waitForEveryPlatform(api, 1, 120_000);
  await control?.resetUsage();
  const indexes = Array.from({ length: settings.onboardAgents }, (_, i) => i);
  const started = Date.now();
  let lastCreated: string | undefined;
  const latencies = await withClients(indexes, settings.clients, async (i) => {
    const t0 = performance.now();
    const created = await api.post<{ uuid: string }>('/api/v3/iofog', {
      name: `onboard-${String(i).padStart(5, '0')}`,
      host: `10.${30 + Math.floor(i / 62500)}.${Math.floor(i / 250) % 250}.${i % 250}`,
    });
    if (created.status !== 201) throw new Error(`S7 create ${i}: ${created.status} ${created.text}`);
    lastCreated = created.body.uuid;
    return performance.now() - t0;
  });
  const createdMs = Date.now() - started;
  if (lastCreated) await waitForPlatform(api, lastCreated, 3_600_000);
  const configuredMs = (await waitForEveryPlatform(api, settings.onboardAgents + 1, 3_600_000)) - started;
  const usage = control ? callsPerOperation(await control.usage()) : {};
  const result = {
    agents: settings.onboardAgents,
    clients: settings.clients,
    apiLatencyMs: {
      p50: Math.round(percentile(latencies, 50)),
      p99: Math.round(percentile(latencies, 99)),
      max: Math.round(Math.max(...latencies)),
    },
    createdMs,
    configuredMs,
    agentsPerSecond: Math.round((settings.onboardAgents / configuredMs) * 1000 * 10) / 10,
    callsPerCreate: usage['POST /api/v3/iofog']?.mean ?? null,
    callsPerFogReconcile: usage['fog reconcile']?.mean ?? null,
  };
  console.log('\nS7 onboarding');
  console.table({
    [`${settings.onboardAgents} agents from ${settings.clients} clients`]: {
      'API p50 / p99 / max (ms)': `${result.apiLatencyMs.p50} / ${result.apiLatencyMs.p99} / ${result.apiLatencyMs.max}`,
      'all created (s)': (createdMs / 1000).toFixed(1),
      'every first config written (s)': (configuredMs / 1000).toFixed(1),
      'agents a second': result.agentsPerSecond,
      'calls per create / fog reconcile': `${result.callsPerCreate} / ${result.callsPerFogReconcile}`,
    },
  });
  return result;
}

/**
 * How often the agent list is read while waiting. At 1,000 agents one read is 0.2–0.6 s of the API's and
 * the store's time (a 750 KB answer): read every 0.3 s from the first create it took a third of the CPU
 * it was measuring. So the wait watches the agent created last (one small read every 0.25 s) and reads
 * the list only from when that one is ready, once a second until every agent is.
 */
const OBSERVE_EVERY_MS = 1_000;
const WATCH_ONE_EVERY_MS = 250;

type Platform = { platformStatus?: { phase: string } };
const ready = (agent: Platform) => agent.platformStatus?.phase === 'ready';

/** Until one agent's platform is `ready`, read through `GET /api/v3/iofog/{uuid}`. */
function waitForPlatform(api: ApiClient, uuid: string, limitMs: number): Promise<number> {
  return readUntil(
    async () => {
      const read = await api.get<Platform>(`/api/v3/iofog/${uuid}`);
      return read.status === 200 && ready(read.body);
    },
    { everyMs: WATCH_ONE_EVERY_MS, limitMs, what: `agent ${uuid} ready` },
  );
}

/**
 * Until the agent list holds `agents` agents and every one's platform is `ready` (its certificates and
 * NATS files made: the computation that writes its router config completed); returns when that was
 * seen (epoch ms). Read through `GET /api/v3/iofog-list`, which earlier releases answer too.
 */
function waitForEveryPlatform(api: ApiClient, agents: number, limitMs: number): Promise<number> {
  return readUntil(
    async () => {
      const read = await api.get<{ fogs: Platform[] }>('/api/v3/iofog-list');
      const fogs = read.status === 200 ? read.body.fogs : [];
      return fogs.length >= agents && fogs.every(ready);
    },
    { everyMs: OBSERVE_EVERY_MS, limitMs, what: 'agents all ready' },
  );
}

/** Reads every `everyMs` until a read says done; returns when that read came back (epoch ms). */
async function readUntil(
  done: () => Promise<boolean>,
  { everyMs, limitMs, what }: { everyMs: number; limitMs: number; what: string },
): Promise<number> {
  const started = Date.now();
  for (;;) {
    const finished = await done();
    const seen = Date.now();
    if (finished) return seen;
    if (seen - started > limitMs) throw new Error(`S7: ${what} not seen after ${limitMs} ms`);
    await sleep(everyMs);
  }
}
