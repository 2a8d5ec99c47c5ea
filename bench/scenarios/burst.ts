import type { ApiClient } from '../../test/support/client.js';
import {
  callsPerOperation,
  createAgent,
  externalServiceBody,
  type Observer,
  percentile,
  type RuntimeControl,
  sleep,
  withClients,
} from '../support.js';

/**
 * S1 burst: N creates from C concurrent clients. Reports API latency, time to ready, convergence,
 * hub writes, DynamoDB capacity and SQS messages per service, lost hub entries and duplicate ports.
 */
export async function runBurst(
  api: ApiClient,
  observer: Observer,
  settings: { n: number; clients: number },
  control: RuntimeControl,
  hub: HubDocument = remoteHub(api, observer),
) {
  await hub.setUp();
  await sleep(500);
  await control.resetUsage();
  const names = Array.from({ length: settings.n }, (_, i) => `s1-${String(i).padStart(5, '0')}`);
  const createdAt = new Map<string, number>();
  const readyAt = new Map<string, number>();
  const started = Date.now();

  // Readiness is watched from the first create on (one index query every 500 ms, reading back names and
  // statuses only), so each service's time to ready runs from the answer to its own create, not from
  // the end of the burst.
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      const now = Date.now();
      for (const service of await observer.serviceStatuses()) {
        if (
          service.name.startsWith('s1-') &&
          service.provisioningStatus === 'ready' &&
          !readyAt.has(service.name)
        ) {
          readyAt.set(service.name, now);
        }
      }
      if (readyAt.size >= settings.n) return;
      if (now - started > 900_000)
        throw new Error(`S1: only ${readyAt.size}/${settings.n} ready after 15 minutes`);
      await sleep(500);
    }
  })();
  let latencies: number[];
  try {
    latencies = await withClients(names, settings.clients, async (name) => {
      const t0 = performance.now();
      const response = await api.post('/api/v3/services', externalServiceBody(name, hub.controlPlane));
      const elapsed = performance.now() - t0;
      if (response.status !== 201) throw new Error(`create ${name}: ${response.status} ${response.text}`);
      createdAt.set(name, Date.now());
      return elapsed;
    });
  } catch (error) {
    watching = false;
    throw error;
  }
  await watcher;
  const converged = Date.now();
  const usage = await control.usage();
  const hubListeners = await hub.listeners();
  const services = (await observer.services()).filter((service) => service.name.startsWith('s1-'));
  const ports = services.map((service) => service.bridgePort);
  const lost = names.filter(
    (name) =>
      hubListeners[`${name}-listener`]?.port !== String(services.find((s) => s.name === name)?.bridgePort),
  ).length;
  // A service seen ready before its create's answer arrived counts as ready at the answer.
  const timeToReady = names.map((name) => Math.max(0, readyAt.get(name)! - createdAt.get(name)!));
  const result = {
    services: settings.n,
    clients: settings.clients,
    apiLatencyMs: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)) },
    timeToReadyMs: {
      p50: percentile(timeToReady, 50),
      p99: percentile(timeToReady, 99),
      max: Math.max(...timeToReady),
    },
    convergenceMs: converged - started,
    controlPlane: hub.controlPlane,
    hubWrites: usage.hubWrites,
    hubWritesPerService: Math.round((usage.hubWrites / settings.n) * 100) / 100,
    dynamodbReadUnitsPerService: round((usage.dynamodbReadUnits / settings.n) * 100) / 100,
    dynamodbWriteUnitsPerService: round((usage.dynamodbWriteUnits / settings.n) * 100) / 100,
    dynamodbCallsPerService:
      round((Object.values(usage.dynamodbCalls).reduce((a, b) => a + b, 0) / settings.n) * 100) / 100,
    sqsMessagesPerService: round((usage.sqsMessagesSent / settings.n) * 100) / 100,
    lost,
    duplicatePorts: ports.length - new Set(ports).size,
    callsPerOperation: callsPerOperation(usage),
    steps: Object.fromEntries(
      Object.entries(usage.steps)
        .sort(([, a], [, b]) => b.totalMs - a.totalMs)
        .map(([name, step]) => [
          name,
          {
            calls: step.calls,
            averageMs: Math.round(step.totalMs / step.calls),
            totalMs: Math.round(step.totalMs),
          },
        ]),
    ),
  };
  console.log(`\nS1 burst (${hub.controlPlane} control plane)`);
  console.table({
    'creates / clients': `${settings.n} / ${settings.clients}`,
    'API latency p50 / p99 (ms)': `${result.apiLatencyMs.p50} / ${result.apiLatencyMs.p99}`,
    'time to ready p50 / p99 / max (ms)': `${result.timeToReadyMs.p50} / ${result.timeToReadyMs.p99} / ${result.timeToReadyMs.max}`,
    'total convergence (ms)': result.convergenceMs,
    'hub writes (per service)': `${result.hubWrites} (${result.hubWritesPerService})`,
    'DynamoDB RCU / WCU per service': `${result.dynamodbReadUnitsPerService} / ${result.dynamodbWriteUnitsPerService}`,
    'DynamoDB calls per service': result.dynamodbCallsPerService,
    'SQS messages per service': result.sqsMessagesPerService,
    'lost hub entries': result.lost,
    'duplicate ports': result.duplicatePorts,
    ...Object.fromEntries(
      Object.entries(result.callsPerOperation).map(([kind, calls]) => [
        `calls per ${kind}: all (mean / max), in sequence (mean / max)`,
        `${calls.mean} / ${calls.max}, ${calls.sequentialMean} / ${calls.sequentialMax}`,
      ]),
    ),
  });
  console.log('S1 steps, slowest total first');
  console.table(result.steps);
  return result;
}

const round = (value: number) => Math.round(value);

/** Where the hub document lives: the default router's config (remote) or the operator's ConfigMap. */
export interface HubDocument {
  controlPlane: 'remote' | 'kubernetes';
  setUp: () => Promise<void>;
  listeners: () => Promise<Record<string, { port: string }>>;
}

/** Remote control plane: the first agent becomes the system agent, and its router is the hub. */
export function remoteHub(api: ApiClient, observer: Observer): HubDocument {
  let hubKey = '';
  return {
    controlPlane: 'remote',
    setUp: async () => {
      hubKey = await createAgent(api, { name: 's1-hub', host: 'hub.example.com' });
      // The burst measures services against a provisioned hub, not the hub's own first provisioning
      // (CAs, certificates, NATS files) running at the same time.
      for (;;) {
        const agent = await api.get<{ platformStatus?: { phase: string } }>(`/api/v3/iofog/${hubKey}`);
        if (agent.body.platformStatus?.phase === 'ready') break;
        await sleep(200);
      }
    },
    listeners: () => observer.storedListeners(hubKey),
  };
}
