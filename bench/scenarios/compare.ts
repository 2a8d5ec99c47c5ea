import type { ApiClient } from '../../test/support/client.js';
import { externalServiceBody, percentile, sleep, withClients } from '../support.js';

/**
 * S1 against any controller speaking the v3 API (the reference, or a fogbridge elsewhere): N external
 * services created from C clients, then watched through `GET /api/v3/services` every 500 ms. Reports API
 * latency, time to ready from each create's answer (when the controller reports `provisioningStatus`),
 * failed creates and duplicate ports. The hub itself is not read: only what the API says.
 */
export async function runComparisonBurst(api: ApiClient, settings: { n: number; clients: number }) {
  const run = Date.now().toString(36);
  const names = Array.from({ length: settings.n }, (_, i) => `cmp-${run}-${String(i).padStart(5, '0')}`);
  const answeredAt = new Map<string, number>();
  let failed = 0;
  const started = Date.now();
  const latencies = await withClients(names, settings.clients, async (name) => {
    const t0 = performance.now();
    const response = await api.post('/api/v3/services', externalServiceBody(name));
    const elapsed = performance.now() - t0;
    if (response.status === 201) answeredAt.set(name, Date.now());
    else failed += 1;
    return elapsed;
  });
  const readyAt = new Map<string, number>();
  let services: { name: string; bridgePort?: number | null; provisioningStatus?: string }[] = [];
  for (;;) {
    const now = Date.now();
    const listed = await api.get<unknown>('/api/v3/services');
    const body = listed.body as typeof services | { services?: typeof services };
    services = (Array.isArray(body) ? body : (body.services ?? [])).filter((service) =>
      answeredAt.has(service.name),
    );
    for (const service of services) {
      if (service.provisioningStatus === 'ready' && !readyAt.has(service.name))
        readyAt.set(service.name, now);
    }
    const reportsStatus = services.some((service) => service.provisioningStatus !== undefined);
    if (!reportsStatus || readyAt.size >= answeredAt.size || now - started > 600_000) break;
    await sleep(500);
  }
  const ports = services.map((service) => service.bridgePort).filter((port) => typeof port === 'number');
  const timeToReady = [...readyAt].map(([name, at]) => Math.max(0, at - answeredAt.get(name)!));
  const result = {
    creates: settings.n,
    clients: settings.clients,
    apiLatencyMs: { p50: Math.round(percentile(latencies, 50)), p99: Math.round(percentile(latencies, 99)) },
    timeToReadyMs: { p50: percentile(timeToReady, 50), p99: percentile(timeToReady, 99) },
    failed,
    ready: readyAt.size,
    duplicatePorts: ports.length - new Set(ports).size,
  };
  console.log('\nS1 burst against', api.baseUrl);
  console.table({
    'creates / clients': `${settings.n} / ${settings.clients}`,
    'API latency p50 / p99 (ms)': `${result.apiLatencyMs.p50} / ${result.apiLatencyMs.p99}`,
    'time to ready p50 / p99 (ms)': `${result.timeToReadyMs.p50} / ${result.timeToReadyMs.p99}`,
    'failed creates': failed,
    'ready (as the API reports)': `${result.ready} / ${answeredAt.size}`,
    'duplicate ports': result.duplicatePorts,
  });
  return result;
}
