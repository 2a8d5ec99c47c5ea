import type { ApiClient } from '../../test/support/client.js';
import { ScriptedAgent } from '../../test/support/scripted-agent.js';
import { measurePage } from '../page.js';
import { callsPerOperation, createAgent, percentile, type RuntimeControl, withClients } from '../support.js';
import { waitFor } from './fan-out.js';

/**
 * S5 topology: GET /api/v3/topology as the fleet grows to each size in `--topology-agents`
 * (1,000 and 10,000 by default). The hub and the first 100 agents run routers (edge, NATS leaves: the
 * hub's neighbourhood, with links to check); the rest run neither, as many small sites do. Every agent
 * is provisioned and reports its status once, so each site has a last report; one service is selected
 * by every agent. At each size: the form answered, the latency of the default read (five in a row),
 * the store calls and read units of one, its size in bytes, and the same for one agent's neighbourhood;
 * then the network page in Chromium: time to its first drawing and to its largest group opened.
 */
export async function runTopology(
  api: ApiClient,
  settings: { topologyAgents: number[]; clients: number },
  control: RuntimeControl,
) {
  const hub = await createAgent(api, { name: 'topology-hub', host: 'hub.example.com' });
  await provisionAndReport(api, [hub], settings.clients);
  const created = await api.post('/api/v3/services', {
    name: 'topology-all',
    type: 'external',
    resource: 'topology.example.com',
    targetPort: 443,
    tags: ['all'],
  });
  if (created.status !== 201) throw new Error(`S5 service: ${created.status} ${created.text}`);
  let count = 0;
  const rows: Record<string, unknown>[] = [];
  for (const size of settings.topologyAgents) {
    const indexes = Array.from({ length: Math.max(0, size - count) }, (_, i) => count + i);
    const started = Date.now();
    const uuids = await withClients(indexes, settings.clients, (i) =>
      createAgent(api, {
        name: `site-${String(i).padStart(5, '0')}`,
        host: `10.${20 + Math.floor(i / 62500)}.${Math.floor(i / 250) % 250}.${i % 250}`,
        tags: ['service.iofog.org/tag: all'],
        ...(i < 100 ? { natsMode: 'leaf' } : { routerMode: 'none', natsMode: 'none' }),
      }),
    );
    await provisionAndReport(api, uuids, settings.clients);
    count = size;
    await waitFor(async () => {
      const read = await api.get<{ counts: { sites: number } }>('/api/v3/topology?form=summary');
      return read.status === 200 && read.body.counts.sites === size + 1;
    }, 3_600_000);
    const reads = await measureReads(api, control);
    const page = await measurePage(api.baseUrl, api.token ?? '');
    rows.push({ agents: size, grownMs: Date.now() - started, ...reads, ...(page ? { page } : {}) });
  }
  const result = { rows };
  console.log('\nS5 topology');
  console.table(
    Object.fromEntries(
      rows.map((row) => [
        `${row.agents} agents`,
        {
          form: row.form,
          'ms p50 / max (5 reads)': row.latency,
          'store calls / RCU': row.calls,
          bytes: row.bytes,
          "one agent's neighbourhood (ms, calls)": row.agent,
          'network page: first draw / group opened (ms)': row.page
            ? `${(row.page as { firstDrawMs: number }).firstDrawMs} / ${(row.page as { openedGroupMs: number }).openedGroupMs} (${(row.page as { drawn: number }).drawn} sites drawn)`
            : 'no Chromium',
        },
      ]),
    ),
  );
  return result;
}

async function provisionAndReport(api: ApiClient, uuids: string[], clients: number) {
  await withClients(uuids, clients, async (uuid) => {
    const key = await api.get<{ key: string }>(`/api/v3/iofog/${uuid}/provisioning-key`);
    const agent = new ScriptedAgent(api.baseUrl);
    await agent.provision(key.body.key, 1);
    await agent.reportStatus();
  });
}

async function measureReads(api: ApiClient, control: RuntimeControl) {
  const latencies: number[] = [];
  let form = '';
  let bytes = 0;
  await control.resetUsage();
  for (let i = 0; i < 5; i += 1) {
    const started = performance.now();
    const read = await api.get<{ form: string }>('/api/v3/topology');
    latencies.push(performance.now() - started);
    if (read.status !== 200) throw new Error(`S5 topology: ${read.status} ${read.text}`);
    form = read.body.form;
    bytes = Buffer.byteLength(read.text);
  }
  const usage = callsPerOperation(await control.usage())['GET /api/v3/topology'];
  await control.resetUsage();
  const agentStarted = performance.now();
  const agent = await api.get('/api/v3/topology?agent=site-00000');
  const agentMs = Math.round(performance.now() - agentStarted);
  if (agent.status !== 200) throw new Error(`S5 agent topology: ${agent.status} ${agent.text}`);
  const agentCalls = callsPerOperation(await control.usage())['GET /api/v3/topology']?.max ?? 0;
  return {
    form,
    latency: `${Math.round(percentile(latencies, 50))} / ${Math.round(Math.max(...latencies))}`,
    calls: `${usage?.max ?? 0} / ${usage?.readUnitsMean ?? 0}`,
    bytes,
    agent: `${agentMs}, ${agentCalls}`,
  };
}
