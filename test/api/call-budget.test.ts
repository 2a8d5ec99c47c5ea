import { afterEach, describe, expect, it } from 'vitest';
import { resetUsage, usage } from '../../infra/local/usage.js';
import { createAgent, createHub, fabricSettled } from '../fixtures/world.js';
import { routersQuiescent } from '../support/quiescent.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';
import { ScriptedAgent } from '../support/scripted-agent.js';

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
  it('creates a service in five calls, four in sequence, and tells the agent it selects in at most six per fog reconcile', async () => {
    // Prepare: operations measured, no sweep timer; the hub and one provisioned agent tagged "fleet", settled
    t = await startTestRuntime({ sweepIntervalMs: 3_600_000, measureOperations: true });
    const hub = await createHub(t.api);
    const edge = await createAgent(t.api, {
      name: 'edge',
      host: '10.0.0.7',
      tags: ['service.iofog.org/tag: fleet'],
    });
    await fabricSettled(t.api);
    const key = await t.api.get<{ key: string }>(`/api/v3/iofog/${edge}/provisioning-key`);
    const agent = new ScriptedAgent(t.runtime.url);
    await agent.provision(key.body.key, 1);
    // The new agent's set-up asks the hub for a reconcile too (its NATS routes): all of it done, and
    // every change acknowledged by the agent, first.
    await routersQuiescent(t, [hub, edge]);
    await agent.poll();
    expect((await agent.changes()).flags.microserviceConfig).toBe(false);
    resetUsage();

    // Act
    const created = await t.api.post('/api/v3/services', {
      name: 'budget',
      type: 'external',
      resource: 'budget.backend.example.com',
      targetPort: 443,
      tags: ['fleet'],
    });
    // The agent is told by its fog reconcile (the listener itself is composed into its config on read).
    await expect
      .poll(async () => (await agent.changes()).flags.microserviceConfig, { timeout: 60_000, interval: 100 })
      .toBe(true);
    const { routerConfig } = await agent.poll();
    await expect.poll(() => usage.operations['fog reconcile']?.count ?? 0).toBeGreaterThanOrEqual(1);

    // Assess: the default router, the allocator, the claim, the row and the reconcile message, the
    // default router read beside the allocator so four wait on each other; the agent's fog reconcile
    // within the budget, and the listener in the config the agent pulled
    expect(created.status).toBe(201);
    expect(usage.operations['POST /api/v3/services']).toEqual({
      count: 1,
      calls: 5,
      maxCalls: 5,
      sequentialCalls: 4,
      maxSequentialCalls: 4,
      readUnits: 1,
    });
    expect(usage.operations['fog reconcile']?.maxCalls).toBeLessThanOrEqual(6);
    expect(Object.keys((routerConfig?.bridges as RouterConfig['bridges'])?.tcpListeners ?? {})).toEqual([
      'budget-listener',
    ]);
  });
});
