import { readFileSync } from 'node:fs';
import type { SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as serviceWorker } from '../../functions/workers/service-reconcile.js';
import { lambdaContext } from '../../infra/local/lambda-context.js';
import { getRouterConfig } from '../../shared/store/routers.js';
import { getServiceRow } from '../../shared/store/services.js';
import { bridgesOf, givenAgent, givenService } from './fleet.js';
import { newWorld, stopStore, type World } from './harness.js';

/**
 * The hub is where a burst of services queues: every service's entries are written there under the
 * hub lock. Given ten new services, when the service worker gets their ten reconciles in one batch (as
 * Lambda hands a FIFO batch over, events/sqs-service-reconcile-batch.json), then one write of the hub
 * holds all ten listeners, each on its own port, and every service is ready.
 */

let world: World;
let hub: string;
const NAMES = Array.from({ length: 10 }, (_, i) => `svc-${i}`);
const batch = JSON.parse(
  readFileSync(new URL('../../events/sqs-service-reconcile-batch.json', import.meta.url), 'utf8'),
) as SQSEvent;

beforeAll(async () => {
  world = await newWorld();
  hub = await givenAgent(world, { name: 'hub', host: 'hub.example.com' });
  await world.settle();
}, 120_000);

afterAll(async () => {
  world?.dispose();
  await stopStore();
});

describe('a batch of service reconciles on one hub', () => {
  it('writes the hub once for the whole batch, every listener on its own port', async () => {
    // Prepare: ten services, their reconciles not run yet
    for (const name of NAMES)
      await givenService(world, { name, type: 'external', resource: `${name}.example.com`, targetPort: 443 });
    const before = await world.run(() => getRouterConfig(hub));

    // Act
    const result = await world.run(() => serviceWorker(batch, lambdaContext('worker')));

    // Assess
    expect(result).toEqual({ batchItemFailures: [] });
    const after = await world.run(() => getRouterConfig(hub));
    expect(after!.version - before!.version).toBe(1);
    const listeners = (await bridgesOf(world, hub)).listeners;
    expect(listeners).toEqual(NAMES.map((name) => `${name}-listener`).sort());
    const rows = await world.run(() => Promise.all(NAMES.map((name) => getServiceRow(name))));
    expect(rows.map((row) => row?.provisioningStatus)).toEqual(NAMES.map(() => 'ready'));
    expect(new Set(rows.map((row) => row?.bridgePort)).size).toBe(NAMES.length);
  });
});
