import { afterEach, describe, expect, it } from 'vitest';
import { resetUsage, usage } from '../../shared/metrics/usage.js';
import { createAgent, createHub, fabricSettled } from '../fixtures/world.js';
import { eventually } from '../support/client.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';

/**
 * The store and queue calls an operation makes, counted as `npm run bench` counts them (every DynamoDB
 * and SQS call inside the operation): the budget a create and a fog reconcile keep at any fleet size.
 */

type RouterConfig = { bridges?: { tcpListeners?: Record<string, unknown> } };

let t: TestRuntime | undefined;

afterEach(async () => {
  await t?.stop();
  t = undefined;
});

describe('store and queue calls per operation', () => {
  it('creates a service in five calls and tells the agent it selects in at most six per fog reconcile', async () => {
    // Prepare: metering on, no sweep timer; the hub and one agent tagged "fleet", their fabric made
    t = await startTestRuntime({ sweepIntervalMs: 3_600_000, env: { FOGBRIDGE_METER_USAGE: 'true' } });
    await createHub(t.api);
    const edge = await createAgent(t.api, {
      name: 'edge',
      host: '10.0.0.7',
      tags: ['service.iofog.org/tag: fleet'],
    });
    await fabricSettled(t.api);
    resetUsage();

    // Act
    const created = await t.api.post('/api/v3/services', {
      name: 'budget',
      type: 'external',
      resource: 'budget.backend.example.com',
      targetPort: 443,
      tags: ['fleet'],
    });
    await eventually(async () => {
      const { body } = await t!.api.get<RouterConfig>(`/api/v3/iofog/${edge}/router-config`);
      return body.bridges?.tcpListeners?.['budget-listener'] ? true : undefined;
    }, "the agent's listener for the new service");

    // Assess: the default router, the allocator, the claim, the row and the reconcile message
    expect(created.status).toBe(201);
    expect(usage.operations['create service']).toEqual({ count: 1, calls: 5, maxCalls: 5, readUnits: 1 });
    const fogReconciles = usage.operations['fog reconcile'];
    expect(fogReconciles?.count).toBeGreaterThanOrEqual(1);
    expect(fogReconciles?.maxCalls).toBeLessThanOrEqual(6);
  });
});
