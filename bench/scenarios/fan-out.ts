import { config } from '../../shared/context.js';
import { resetUsage, usage } from '../../shared/metrics/usage.js';
import { sweep } from '../../shared/reconcile/sweeper.js';
import type { ApiClient } from '../../test/support/client.js';
import { createAgent, type Observer, percentile, sleep, withClients } from '../support.js';
import { callsPerOperation } from './burst.js';

/**
 * S2 fan-out: A agents tagged `all` must all get one new service's listener; then a tag change on the
 * service makes every one of them reconcile again. Reports the time until every agent's config is
 * right and the store reads per fog reconcile.
 */
export async function runFanOut(
  api: ApiClient,
  observer: Observer,
  settings: { agents: number; clients: number },
  inRuntime: <R>(task: () => Promise<R>) => Promise<R>,
) {
  const indexes = Array.from({ length: settings.agents }, (_, i) => i);
  const agents = await withClients(indexes, settings.clients, (i) =>
    createAgent(api, {
      name: `s2-agent-${i}`,
      host: `10.20.${Math.floor(i / 250)}.${i % 250}`,
      tags: ['service.iofog.org/tag: all'],
      // S2 measures the bridge fan-out: the agents' NATS processes (two more certificates each) would
      // only lengthen the set-up.
      natsMode: 'none',
    }),
  );
  await waitForRouters(observer, agents, 600_000);

  resetUsage();
  const started = Date.now();
  const created = await api.post<{ bridgePort: number }>('/api/v3/services', {
    name: 's2-fanout',
    type: 'external',
    resource: 'fanout.example.com',
    targetPort: 443,
    tags: ['fanout'],
  });
  if (created.status !== 201) throw new Error(`S2 create: ${created.status} ${created.text}`);
  // Watched with batched reads every 500 ms, so the watching does not slow what it watches.
  await waitFor(
    async () => {
      const listeners = await observer.routerListeners(agents);
      return agents.every((uuid) => listeners.get(uuid)?.includes('s2-fanout-listener'));
    },
    600_000,
    500,
  );
  const listenerEverywhereMs = Date.now() - started;
  const createReconciles = usage.routerReconciles;
  const createReads = usage.dynamodbReadUnits;
  const createCalls = callsPerOperation()['fog reconcile'];

  resetUsage();
  const tagStarted = Date.now();
  const patched = await api.patch('/api/v3/services/s2-fanout', { tags: ['fanout', 'renamed'] });
  if (patched.status !== 204) throw new Error(`S2 patch: ${patched.status} ${patched.text}`);
  await waitForRouters(observer, agents, 600_000, tagStarted);
  const tagChangeMs = Date.now() - tagStarted;
  const tagReconciles = usage.routerReconciles;
  const tagReads = usage.dynamodbReadUnits;
  const drift = await measureDriftCycle(settings.agents, inRuntime);
  const result = {
    agents: settings.agents,
    listenerOnEveryAgentMs: listenerEverywhereMs,
    fogReconcilesForCreate: createReconciles,
    readUnitsPerFogReconcileOnCreate: round2(createReads / Math.max(1, createReconciles)),
    callsPerFogReconcileOnCreate: createCalls,
    tagChangeConvergedMs: tagChangeMs,
    fogReconcilesForTagChange: tagReconciles,
    readUnitsPerFogReconcileOnTagChange: round2(tagReads / Math.max(1, tagReconciles)),
    driftCheck: drift,
  };
  console.log('\nS2 fan-out');
  console.table({
    'agents tagged all': settings.agents,
    'new service on every agent (ms)': result.listenerOnEveryAgentMs,
    'fog reconciles (create)': result.fogReconcilesForCreate,
    'DynamoDB RCU per fog reconcile (create)': result.readUnitsPerFogReconcileOnCreate,
    'store/queue calls per fog reconcile (create; mean / max)': createCalls
      ? `${createCalls.mean} / ${createCalls.max}`
      : 'none',
    'tag change converged on every agent (ms)': result.tagChangeConvergedMs,
    'fog reconciles (tag change)': result.fogReconcilesForTagChange,
    'DynamoDB RCU per fog reconcile (tag change)': result.readUnitsPerFogReconcileOnTagChange,
    [`drift check: sweeps for every agent (window ${drift.window})`]: drift.sweeps,
    'drift check: DynamoDB reads / RCU per sweep': `${drift.readsPerSweep} / ${drift.readUnitsPerSweep}`,
    'drift check: DynamoDB reads per router checked': drift.readsPerRouter,
    'drift check: ms per sweep (p50 / max)': `${drift.msPerSweepP50} / ${drift.msPerSweepMax}`,
    'drift check: routers found drifted': drift.drifted,
  });
  return result;
}

/**
 * One full cycle of the periodic sweep's drift check over every agent (⌈agents / window⌉ sweeps, run
 * here one after another): what a sweep reads, how long it takes, and that nothing converged is
 * reported as drifted.
 */
async function measureDriftCycle(agents: number, inRuntime: <R>(task: () => Promise<R>) => Promise<R>) {
  const window = await inRuntime(async () => config().driftCheckRouters);
  const sweeps = Math.ceil(agents / window);
  const durations: number[] = [];
  let drifted = 0;
  resetUsage();
  for (let i = 0; i < sweeps; i++) {
    const started = performance.now();
    drifted += (await inRuntime(() => sweep({ full: false }))).drifted;
    durations.push(performance.now() - started);
  }
  const reads = Object.entries(usage.dynamodbCalls)
    .filter(([command]) => /^(Get|Query|Scan|BatchGet)/.test(command))
    .reduce((sum, [, calls]) => sum + calls, 0);
  return {
    window,
    sweeps,
    readsPerSweep: Math.round(reads / sweeps),
    readUnitsPerSweep: round2(usage.dynamodbReadUnits / sweeps),
    readsPerRouter: round2(reads / (agents + sweeps)),
    msPerSweepP50: Math.round(percentile(durations, 50)),
    msPerSweepMax: Math.round(Math.max(...durations)),
    drifted,
  };
}

/** Waits until every router finished all requests made up to now. */
async function waitForRouters(observer: Observer, routers: string[], timeoutMs: number, after = 0) {
  await sleep(200);
  await waitFor(async () => {
    const states = await Promise.all(routers.map((uuid) => observer.routerRequests(uuid)));
    return (
      states.every((state) => state.requested > 0 && state.completed >= state.requested) && Date.now() > after
    );
  }, timeoutMs);
}

async function waitFor(condition: () => Promise<boolean>, timeoutMs: number, intervalMs = 500) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('S2: timed out');
    await sleep(intervalMs);
  }
}

const round2 = (value: number) => Math.round(value * 100) / 100;
