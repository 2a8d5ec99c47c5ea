import type { ApiClient } from '../../test/support/client.js';
import { callsPerOperation, percentile, type RuntimeControl, sleep, withClients } from '../support.js';

/**
 * S7 onboarding: a burst of `--onboard-agents` agents created from `--clients` clients (1,000 / 20), each
 * with a router and NATS leaf (four certificates: router site and local server, NATS server and MQTT
 * server). Measured: the creates' API latency, and the time from the first create until every agent's
 * first complete router config is written (no site `new` in the topology): agents onboarded a second.
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
  await waitForNoNewSites(api, 1, 120_000);
  await control?.resetUsage();
  const indexes = Array.from({ length: settings.onboardAgents }, (_, i) => i);
  const started = Date.now();
  const latencies = await withClients(indexes, settings.clients, async (i) => {
    const t0 = performance.now();
    const created = await api.post('/api/v3/iofog', {
      name: `onboard-${String(i).padStart(5, '0')}`,
      host: `10.${30 + Math.floor(i / 62500)}.${Math.floor(i / 250) % 250}.${i % 250}`,
    });
    if (created.status !== 201) throw new Error(`S7 create ${i}: ${created.status} ${created.text}`);
    return performance.now() - t0;
  });
  const createdMs = Date.now() - started;
  const configuredMs = (await waitForNoNewSites(api, settings.onboardAgents + 1, 3_600_000)) - started;
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

/** Until the topology counts `sites` sites and none is `new`; returns when that was seen (epoch ms). */
async function waitForNoNewSites(api: ApiClient, sites: number, limitMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const read = await api.get<{ counts: { sites: number; byState: { new: number } } }>(
      '/api/v3/topology?form=summary',
    );
    const seen = Date.now();
    if (read.status === 200 && read.body.counts.sites >= sites && read.body.counts.byState.new === 0)
      return seen;
    if (seen - started > limitMs) throw new Error(`S7: first configs not all written after ${limitMs} ms`);
    await sleep(200);
  }
}
