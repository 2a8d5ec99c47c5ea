import type { ApiClient } from '../../test/support/client.js';
import { createAgent, type Observer, sleep } from '../support.js';

interface Expected {
  targetPort: number;
  tags: string[];
}

/**
 * S3 churn: C clients run random creates, updates and deletes on their own names for a fixed time,
 * each keeping a model of what it did. After convergence the store, the hub and an agent tagged `all`
 * must match the model exactly.
 */
export async function runChurn(
  api: ApiClient,
  observer: Observer,
  settings: { clients: number; churnSeconds: number },
) {
  const watcher = await createAgent(api, {
    name: 's3-watcher',
    host: '10.30.0.1',
    tags: ['service.iofog.org/tag: all'],
  });
  const model = new Map<string, Expected>();
  const counts = { create: 0, update: 0, delete: 0, unexpected: 0 };
  const unexpected: string[] = [];
  const note = (operation: string, name: string, response: { status: number; text: string }) => {
    counts.unexpected++;
    if (unexpected.length < 10) unexpected.push(`${operation} ${name}: ${response.status} ${response.text}`);
  };
  const deadline = Date.now() + settings.churnSeconds * 1000;
  let seed = 42;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };

  await Promise.all(
    Array.from({ length: settings.clients }, async (_, client) => {
      const pool = Array.from({ length: 8 }, (_, i) => `s3-c${client}-${i}`);
      while (Date.now() < deadline) {
        const name = pool[Math.floor(random() * pool.length)]!;
        const exists = model.has(name);
        if (!exists) {
          const expected = { targetPort: 1000 + Math.floor(random() * 1000), tags: ['churn'] };
          const response = await api.post('/api/v3/services', {
            name,
            type: 'external',
            resource: `${name}.example.com`,
            targetPort: expected.targetPort,
            tags: expected.tags,
          });
          if (response.status === 201) model.set(name, expected);
          else note('create', name, response);
          counts.create++;
        } else if (random() < 0.6) {
          const expected = {
            targetPort: 2000 + Math.floor(random() * 1000),
            tags: random() < 0.5 ? ['churn'] : ['churn', 'b'],
          };
          const response = await api.patch(`/api/v3/services/${name}`, expected);
          if (response.status === 204) model.set(name, expected);
          else note('update', name, response);
          counts.update++;
        } else {
          const response = await api.delete(`/api/v3/services/${name}`);
          if (response.status === 204) model.delete(name);
          else note('delete', name, response);
          counts.delete++;
        }
      }
    }),
  );

  const settleStarted = Date.now();
  let mismatches: string[] = [];
  for (;;) {
    mismatches = await compare(observer, watcher, model);
    if (mismatches.length === 0 || Date.now() - settleStarted > 300_000) break;
    await sleep(200);
  }
  const result = {
    seconds: settings.churnSeconds,
    operations: counts,
    unexpectedAnswers: unexpected,
    finalServices: model.size,
    settledMs: Date.now() - settleStarted,
    mismatches: mismatches.length,
    mismatchSamples: mismatches.slice(0, 5),
  };
  console.log('\nS3 churn');
  console.table({
    'clients / seconds': `${settings.clients} / ${settings.churnSeconds}`,
    'creates / updates / deletes': `${counts.create} / ${counts.update} / ${counts.delete}`,
    'unexpected API answers': counts.unexpected,
    'services at the end': model.size,
    'settled after the last operation (ms)': result.settledMs,
    'mismatches with the model': result.mismatches,
  });
  return result;
}

async function compare(observer: Observer, watcher: string, model: Map<string, Expected>): Promise<string[]> {
  const problems: string[] = [];
  const services = (await observer.services()).filter((service) => service.name.startsWith('s3-'));
  const byName = new Map(services.map((service) => [service.name, service]));
  const hubKey = await findHub(observer);
  const hub = hubKey
    ? await observer.routerConfig(hubKey)
    : { listeners: {} as Record<string, { port: string }> };
  const agent = await observer.routerConfig(watcher);
  for (const [name, expected] of model) {
    const row = byName.get(name);
    if (!row) problems.push(`${name}: missing`);
    else if (row.provisioningStatus !== 'ready') problems.push(`${name}: ${row.provisioningStatus}`);
    else if (row.targetPort !== expected.targetPort)
      problems.push(`${name}: targetPort ${row.targetPort} != ${expected.targetPort}`);
    if (hub.listeners[`${name}-listener`]?.port !== String(row?.bridgePort))
      problems.push(`${name}: hub listener`);
    if (agent.listeners[`${name}-listener`]?.port !== String(row?.bridgePort))
      problems.push(`${name}: agent listener`);
  }
  for (const service of services)
    if (!model.has(service.name)) problems.push(`${service.name}: should be gone`);
  for (const listener of Object.keys(hub.listeners)) {
    const name = listener.replace(/-listener$/, '');
    if (name.startsWith('s3-') && !model.has(name)) problems.push(`${name}: orphan hub listener`);
  }
  for (const listener of Object.keys(agent.listeners)) {
    const name = listener.replace(/-listener$/, '');
    if (name.startsWith('s3-') && !model.has(name)) problems.push(`${name}: orphan agent listener`);
  }
  const ports = services.map((service) => service.bridgePort);
  if (new Set(ports).size !== ports.length) problems.push('duplicate bridge ports');
  return problems;
}

let hubKeyCache: string | undefined;
/** The system agent created by S1 or S3 is the hub; its uuid is the router key of the hub document. */
async function findHub(observer: Observer): Promise<string | undefined> {
  hubKeyCache ??= await observer.hubRouterKey();
  return hubKeyCache;
}
