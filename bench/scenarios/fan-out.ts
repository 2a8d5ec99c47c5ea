import type { ApiClient } from '../../test/support/client.js';
import { ScriptedAgent } from '../../test/support/scripted-agent.js';
import {
  callsPerOperation,
  createAgentsTaggedAll,
  fogCallsWithBatchReads,
  type Observer,
  percentile,
  type RuntimeControl,
  sleep,
  withClients,
} from '../support.js';

/**
 * S2 fan-out: A agents tagged `all` must all get one new service's listener; then a tag change on the
 * service makes every one of them be told again. Watched from outside the runtime's process: an agent
 * has the listener once it has been told (its change stamp moved) and its config, composed when read,
 * holds it; a sample of agents is read through the API as Edgelet would. Reports the time until every
 * agent has it and the store calls and reads per fog reconcile.
 */
export async function runFanOut(
  api: ApiClient,
  observer: Observer,
  settings: { agents: number; clients: number },
  control: RuntimeControl,
) {
  const agents = await createAgentsTaggedAll(api, {
    count: settings.agents,
    clients: settings.clients,
    prefix: 's2',
    subnet: 20,
  });
  await waitForRouters(observer, agents, 600_000);

  await control.resetUsage();
  const before = await observer.changeStamps(agents);
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
  const told = await waitForAllTold(observer, agents, before, started);
  const sample = await sampledListeners(api, agents);
  if (!sample.every((listeners) => listeners.includes('s2-fanout-listener')))
    throw new Error('S2: an agent told of the new service does not hold its listener');
  const createUsage = await control.usage();

  await control.resetUsage();
  const beforeTag = await observer.changeStamps(agents);
  const tagStarted = Date.now();
  const patched = await api.patch('/api/v3/services/s2-fanout', { tags: ['fanout', 'renamed'] });
  if (patched.status !== 204) throw new Error(`S2 patch: ${patched.status} ${patched.text}`);
  const toldOfTag = await waitForAllTold(observer, agents, beforeTag, tagStarted);
  const tagUsage = await control.usage();
  // The first agent of the empty cluster became the system agent (the hub): its change recomputes the
  // hub, every service's listener, and is measured apart from an edge agent's.
  const hubAgent = await systemAgentOf(api);
  const agentChange = await measureAgentChange(
    api,
    observer,
    control,
    agents.find((uuid) => uuid !== hubAgent)!,
  );
  const hubAgentChange = hubAgent ? await measureAgentChange(api, observer, control, hubAgent) : undefined;
  const drift = await measureDriftCycle(settings.agents, control);
  const sites = await measureSiteStatus(api, control, agents, settings.clients);
  const createCalls = callsPerOperation(createUsage)['fog reconcile'];
  const createWithBatch = fogCallsWithBatchReads(createUsage);
  const result = {
    agents: settings.agents,
    listenerOnEveryAgentMs: told.seenMs,
    agentsToldMs: { p50: told.toldP50Ms, last: told.toldLastMs },
    fogReconcilesForCreate: createUsage.routerReconciles,
    readUnitsPerFogReconcileOnCreate: round2(
      createUsage.dynamodbReadUnits / Math.max(1, createUsage.routerReconciles),
    ),
    callsPerFogReconcileOnCreate: createCalls,
    callsPerFogReconcileWithBatchReadsOnCreate: createWithBatch,
    tagChangeConvergedMs: toldOfTag.seenMs,
    agentsToldOfTagMs: { p50: toldOfTag.toldP50Ms, last: toldOfTag.toldLastMs },
    fogReconcilesForTagChange: tagUsage.routerReconciles,
    readUnitsPerFogReconcileOnTagChange: round2(
      tagUsage.dynamodbReadUnits / Math.max(1, tagUsage.routerReconciles),
    ),
    agentChange,
    hubAgentChange,
    driftCheck: drift,
    siteStatus: sites,
  };
  console.log('\nS2 fan-out');
  console.table({
    'agents tagged all': settings.agents,
    'new service on every agent, seen by the observer (ms)': result.listenerOnEveryAgentMs,
    "agents told, by their flags' write times (ms; p50 / last)": `${told.toldP50Ms} / ${told.toldLastMs}`,
    'fog reconciles (create)': result.fogReconcilesForCreate,
    'DynamoDB RCU per fog reconcile (create)': result.readUnitsPerFogReconcileOnCreate,
    'store/queue calls per fog reconcile (create; mean / max, in sequence max)': createCalls
      ? `${createCalls.mean} / ${createCalls.max}, ${createCalls.sequentialMax}`
      : 'none',
    'batch reads for those fog reconciles; calls per fog reconcile with its share': `${createWithBatch.batchReads}; ${createWithBatch.perReconcile}`,
    'tag change on every agent, seen by the observer (ms)': result.tagChangeConvergedMs,
    'agents told of the tag change (ms; p50 / last)': `${toldOfTag.toldP50Ms} / ${toldOfTag.toldLastMs}`,
    'fog reconciles (tag change)': result.fogReconcilesForTagChange,
    'DynamoDB RCU per fog reconcile (tag change)': result.readUnitsPerFogReconcileOnTagChange,
    'edge agent change: calls per fog reconcile with its batch read (own + batch)': `${agentChange.perReconcile} (${agentChange.own} + ${agentChange.batchReads})`,
    'hub agent change: calls per fog reconcile with its batch read (own + batch)': hubAgentChange
      ? `${hubAgentChange.perReconcile} (${hubAgentChange.own} + ${hubAgentChange.batchReads})`
      : 'no system agent',
    [`drift check: sweeps for every agent (window ${drift.window})`]: drift.sweeps,
    'drift check: DynamoDB reads / RCU per sweep': `${drift.readsPerSweep} / ${drift.readUnitsPerSweep}`,
    'drift check: DynamoDB reads per router checked': drift.readsPerRouter,
    'drift check: ms per sweep (p50 / max)': `${drift.msPerSweepP50} / ${drift.msPerSweepMax}`,
    'drift check: routers found drifted': drift.drifted,
    'per-site status: provisioned agents polling as Edgelet does': sites.agents,
    'per-site status: every site applied, by the service read (ms)': sites.allAppliedMs,
    'per-site status: rounds of every agent polling until then (ms per round)': `${sites.pollRounds} (${sites.msPerPollRound})`,
    'per-site status: summary when all applied': `${sites.summary.applied} / ${sites.summary.expected}`,
    'per-site status: store calls of one service read (sites pending / all applied)': `${sites.callsWhilePending} / ${sites.callsWhenApplied}`,
    'agent poll (GET /agent/config/changes): calls, in sequence': sites.agentPoll
      ? `${sites.agentPoll.mean}, ${sites.agentPoll.sequentialMax}`
      : 'none',
  });
  return result;
}

/**
 * Per-site status at fleet size: every agent is provisioned and polls as Edgelet does (changes,
 * microservices when a flag is up, the acknowledgement; a status report each round); a new service
 * selected by all of them is created, and its read is repeated until it says every site applied it.
 * Reports that time and the store calls of one service read while sites are pending and once all
 * applied (a few queries and one batched read of the waiting agents' reports, not one read per agent).
 */
async function measureSiteStatus(api: ApiClient, control: RuntimeControl, uuids: string[], clients: number) {
  const agents = await withClients(uuids, clients, async (uuid) => {
    const key = await api.get<{ key: string }>(`/api/v3/iofog/${uuid}/provisioning-key`);
    const agent = new ScriptedAgent(api.baseUrl);
    await agent.provision(key.body.key, 1);
    await agent.poll();
    return agent;
  });
  const pollAll = () =>
    withClients(agents, clients, async (agent) => {
      await agent.reportStatus();
      await agent.poll();
    });
  await pollAll();
  // One round of every agent polling, measured: the agent poll is a fleet's most frequent call.
  await control.resetUsage();
  await pollAll();
  const agentPoll = callsPerOperation(await control.usage())['agent poll'];
  const readCalls = async () => {
    await control.resetUsage();
    const read = await api.get<{ sites: { expected: number; applied: number } }>('/api/v3/services/s2-sites');
    if (read.status !== 200) throw new Error(`S2 service read: ${read.status} ${read.text}`);
    const calls = callsPerOperation(await control.usage())['read service']?.max ?? 0;
    return { calls, sites: read.body.sites };
  };
  const started = Date.now();
  const created = await api.post('/api/v3/services', {
    name: 's2-sites',
    type: 'external',
    resource: 'sites.example.com',
    targetPort: 443,
    tags: ['sites'],
  });
  if (created.status !== 201) throw new Error(`S2 sites create: ${created.status} ${created.text}`);
  const whilePending = await readCalls();
  let last = whilePending;
  let rounds = 0;
  await waitFor(
    async () => {
      await pollAll();
      rounds += 1;
      last = await readCalls();
      return last.sites.expected > 0 && last.sites.applied === last.sites.expected;
    },
    900_000,
    0,
  );
  const allAppliedMs = Date.now() - started;
  return {
    agents: agents.length,
    allAppliedMs,
    pollRounds: rounds,
    msPerPollRound: Math.round(allAppliedMs / rounds),
    summary: last.sites,
    callsWhilePending: whilePending.calls,
    callsWhenApplied: last.calls,
    agentPoll,
  };
}

/**
 * Until every agent's change stamp is above the one seen before (batched reads, 500 ms apart, of the
 * agents not yet seen told: the look shrinks as the fan-out goes on). Returns, counted from `started`,
 * when the observer saw the last agent told and when the agents were told by the flags' own write times
 * (median and last): the observer's look interval is not in those.
 */
export async function waitForAllTold(
  observer: Observer,
  agents: string[],
  before: Map<string, { stamp: number }>,
  started: number,
): Promise<{ seenMs: number; toldP50Ms: number; toldLastMs: number }> {
  const stamps = new Map<string, { stamp: number; toldAt: number }>();
  let waiting = [...agents];
  await waitFor(
    async () => {
      const seen = await observer.changeStamps(waiting);
      for (const [uuid, stamp] of seen)
        if (stamp.stamp > (before.get(uuid)?.stamp ?? 0)) stamps.set(uuid, stamp);
      waiting = waiting.filter((uuid) => !stamps.has(uuid));
      return waiting.length === 0;
    },
    900_000,
    500,
  );
  const seenMs = Date.now() - started;
  const told = agents.map((uuid) => (stamps.get(uuid)?.toldAt ?? 0) - started);
  return { seenMs, toldP50Ms: Math.round(percentile(told, 50)), toldLastMs: Math.max(...told) };
}

/** The listener names of ten agents spread over the fleet, read through the API as their routers get them. */
export async function sampledListeners(api: ApiClient, agents: string[]): Promise<string[][]> {
  const step = Math.max(1, Math.floor(agents.length / 10));
  const picked = agents.filter((_, index) => index % step === 0).slice(0, 10);
  return Promise.all(
    picked.map(async (uuid) => {
      const response = await api.get<{ bridges?: { tcpListeners?: Record<string, unknown> } }>(
        `/api/v3/iofog/${uuid}/router-config`,
      );
      return Object.keys(response.body.bridges?.tcpListeners ?? {});
    }),
  );
}

/** The system agent's uuid, as the agent list shows it (undefined when there is none). */
async function systemAgentOf(api: ApiClient): Promise<string | undefined> {
  const listed = await api.get<{ fogs: { uuid: string; isSystem: boolean }[] }>('/api/v3/iofog-list');
  return listed.body.fogs.find((agent) => agent.isSystem)?.uuid;
}

/**
 * One agent changed through the API (its description): the fog reconcile that follows runs the agent's
 * whole part (token index, certificates, NATS, its router). Its store/queue calls, its own and the batch
 * read made for it, once it completed.
 */
async function measureAgentChange(
  api: ApiClient,
  observer: Observer,
  control: RuntimeControl,
  agent: string,
) {
  await control.resetUsage();
  const patched = await api.patch(`/api/v3/iofog/${agent}`, { description: 'S2: changed' });
  if (patched.status !== 204) throw new Error(`S2 agent change: ${patched.status} ${patched.text}`);
  await waitForRouters(observer, [agent], 60_000);
  // Its last write (the agent's observed generation) comes after the request is marked completed.
  await sleep(1_000);
  const usage = await control.usage();
  const own = callsPerOperation(usage)['fog reconcile'];
  const { perReconcile, batchReads } = fogCallsWithBatchReads(usage);
  return { perReconcile, own: own?.mean ?? 0, batchReads, fogReconciles: own?.count ?? 0 };
}

/**
 * One full cycle of the periodic sweep's drift check over every agent (⌈agents / window⌉ sweeps, run
 * one after another in the runtime's process): what a sweep reads, how long it takes, and that nothing
 * converged is reported as drifted.
 */
async function measureDriftCycle(agents: number, control: RuntimeControl) {
  const window = (await control.settings()).driftCheckRouters;
  const sweeps = Math.ceil(agents / window);
  const durations: number[] = [];
  let drifted = 0;
  await control.resetUsage();
  for (let i = 0; i < sweeps; i++) {
    const started = performance.now();
    drifted += (await control.sweep()).drifted;
    durations.push(performance.now() - started);
  }
  const usage = await control.usage();
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
export async function waitForRouters(observer: Observer, routers: string[], timeoutMs: number, after = 0) {
  await sleep(200);
  await waitFor(async () => {
    // Batched reads: an observer of 10,000 routers sends 100 calls a look, one at a time.
    const states = await observer.routerRequests(routers);
    return (
      routers.every((uuid) => {
        const state = states.get(uuid);
        return !!state && state.requested > 0 && state.completed >= state.requested;
      }) && Date.now() > after
    );
  }, timeoutMs);
}

export async function waitFor(condition: () => Promise<boolean>, timeoutMs: number, intervalMs = 500) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('S2: timed out');
    await sleep(intervalMs);
  }
}

const round2 = (value: number) => Math.round(value * 100) / 100;
