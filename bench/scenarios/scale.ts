import type { ApiClient } from '../../test/support/client.js';
import {
  callsPerOperation,
  createAgentsTaggedAll,
  externalServiceBody,
  fogCallsWithBatchReads,
  type Observer,
  type RuntimeControl,
  sleep,
  withClients,
} from '../support.js';
import { remoteHub } from './burst.js';
import { sampledListeners, waitForAllTold, waitForRouters } from './fan-out.js';

/**
 * S4 scale: S services on the hub, then A agents tagged `all`, then one new service that every agent
 * must get. Nothing may be lost (every service ready with its own port, the hub holding each listener),
 * and no item of the store may grow with the number of services or agents: the largest item the table
 * holds is reported, with the store calls and read units per service reconcile and per fog reconcile.
 */
export async function runScale(
  api: ApiClient,
  observer: Observer,
  settings: { scaleServices: number; scaleAgents: number; clients: number },
  control: RuntimeControl,
) {
  const hub = remoteHub(api, observer);
  await hub.setUp();

  // Phase 1: the services.
  await control.resetUsage();
  const servicesStarted = Date.now();
  const names = Array.from({ length: settings.scaleServices }, (_, i) => `s4-${String(i).padStart(5, '0')}`);
  await withClients(names, settings.clients, async (name) => {
    const response = await api.post('/api/v3/services', externalServiceBody(name));
    if (response.status !== 201) throw new Error(`S4 create ${name}: ${response.status} ${response.text}`);
  });
  const createdMs = Date.now() - servicesStarted;
  for (;;) {
    const services = (await observer.services()).filter((service) => service.name.startsWith('s4-'));
    if (services.filter((service) => service.provisioningStatus === 'ready').length >= names.length) break;
    if (Date.now() - servicesStarted > 3_600_000) throw new Error('S4: services not ready after an hour');
    await sleep(2_000);
  }
  const servicesReadyMs = Date.now() - servicesStarted;
  const serviceUsage = callsPerOperation(await control.usage());

  // Phase 2: the agents, each selecting every service.
  await control.resetUsage();
  const agentsStarted = Date.now();
  const agents = await createAgentsTaggedAll(api, {
    count: settings.scaleAgents,
    clients: settings.clients,
    prefix: 's4',
    subnet: 40,
  });
  await waitForRouters(observer, agents, 7_200_000);
  const agentsReadyMs = Date.now() - agentsStarted;
  const agentRaw = await control.usage();
  const agentUsage = callsPerOperation(agentRaw);
  const setUpWithBatch = fogCallsWithBatchReads(agentRaw);

  // Phase 3: one new service, on every agent.
  await control.resetUsage();
  const before = await observer.changeStamps(agents);
  const fanOutStarted = Date.now();
  const created = await api.post('/api/v3/services', externalServiceBody('s4-new'));
  if (created.status !== 201) throw new Error(`S4 new service: ${created.status} ${created.text}`);
  const told = await waitForAllTold(observer, agents, before, fanOutStarted);
  const fanOutMs = told.seenMs;
  const fanOutRaw = await control.usage();
  const fanOutUsage = callsPerOperation(fanOutRaw);
  const fanOutWithBatch = fogCallsWithBatchReads(fanOutRaw);
  const sample = await sampledListeners(api, agents);

  // What was lost, and what the store holds.
  const services = (await observer.services()).filter((service) => service.name.startsWith('s4-'));
  const hubListeners = await hub.listeners();
  const ports = services.map((service) => service.bridgePort);
  const lost =
    [...names, 's4-new'].filter(
      (name) =>
        hubListeners[`${name}-listener`]?.port !==
        String(services.find((service) => service.name === name)?.bridgePort),
    ).length + sample.filter((listeners) => listeners.length !== names.length + 1).length;
  const largest = await observer.largestItem();
  const result = {
    services: settings.scaleServices,
    agents: settings.scaleAgents,
    servicesCreatedMs: createdMs,
    servicesReadyMs,
    agentsReadyMs,
    newServiceOnEveryAgentMs: fanOutMs,
    agentsToldMs: { p50: told.toldP50Ms, last: told.toldLastMs },
    sampledAgentListeners: sample.map((listeners) => listeners.length),
    lost,
    duplicatePorts: ports.length - new Set(ports).size,
    largestItem: largest,
    perOperation: { services: serviceUsage, agents: agentUsage, newService: fanOutUsage },
    fogCallsWithBatchReadsOnNewService: fanOutWithBatch,
    fogCallsWithBatchReadsOnAgentSetUp: setUpWithBatch,
  };
  const show = (entry: { mean: number; max: number; readUnitsMean: number } | undefined) =>
    entry ? `${entry.mean} / ${entry.max} / ${entry.readUnitsMean}` : 'none';
  console.log('\nS4 scale');
  console.table({
    'services / agents tagged all': `${settings.scaleServices} / ${settings.scaleAgents}`,
    'services created / ready (ms)': `${createdMs} / ${servicesReadyMs}`,
    'agents provisioned (ms)': agentsReadyMs,
    'new service on every agent, seen by the observer (ms)': fanOutMs,
    "agents told, by their flags' write times (ms; p50 / last)": `${told.toldP50Ms} / ${told.toldLastMs}`,
    'listeners on sampled agents (via the API)': sample.map((listeners) => listeners.length).join(', '),
    'lost / duplicate ports': `${result.lost} / ${result.duplicatePorts}`,
    'largest item (bytes, key)': `${largest.bytes} (${largest.key})`,
    'items in the table': largest.items,
    'calls mean / max / RCU per create service': show(serviceUsage['create service']),
    'calls mean / max / RCU per service reconcile': show(serviceUsage['service reconcile']),
    'calls mean / max / RCU per fog reconcile (agent set-up)': show(agentUsage['fog reconcile']),
    'batch reads (agent set-up); calls per fog reconcile with its share': `${setUpWithBatch.batchReads}; ${setUpWithBatch.perReconcile}`,
    'calls mean / max / RCU per service reconcile (new service)': show(fanOutUsage['service reconcile']),
    'calls mean / max / RCU per fog reconcile (new service)': show(fanOutUsage['fog reconcile']),
    'batch reads (new service); calls per fog reconcile with its share': `${fanOutWithBatch.batchReads}; ${fanOutWithBatch.perReconcile}`,
  });
  return result;
}
