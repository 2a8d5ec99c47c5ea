import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHub } from '../fixtures/world.js';
import { ApiClient, eventually } from '../support/client.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';

/**
 * Two embedded runtimes in one process: each runs its handlers in its own context (configuration,
 * store, queues, signing key), so neither sees the other's data, settings or tokens.
 */
let east: TestRuntime;
let west: TestRuntime;

beforeAll(async () => {
  // Prepare
  [east, west] = await Promise.all([
    startTestRuntime({ env: { BRIDGE_PORTS_RANGE: '20000-20099' } }),
    startTestRuntime({ env: { BRIDGE_PORTS_RANGE: '30000-30099' } }),
  ]);
  await Promise.all([createHub(east.api), createHub(west.api)]);
});

afterAll(async () => {
  await Promise.all([east?.stop(), west?.stop()]);
});

describe('two runtimes in one process', () => {
  it('keep their stores, settings and reconcilers apart', async () => {
    // Act
    const created = await east.api.post<{ bridgePort: number }>('/api/v3/services', {
      name: 'only-east',
      type: 'external',
      resource: 'east.example.com',
      targetPort: 443,
    });
    const onWest = await west.api.post<{ bridgePort: number }>('/api/v3/services', {
      name: 'only-west',
      type: 'external',
      resource: 'west.example.com',
      targetPort: 443,
    });

    // Assess
    expect([created.status, onWest.status]).toEqual([201, 201]);
    expect(created.body.bridgePort).toBe(20000);
    expect(onWest.body.bridgePort).toBe(30000);
    expect((await east.api.get('/api/v3/services/only-west')).status).toBe(404);
    expect((await west.api.get('/api/v3/services/only-east')).status).toBe(404);
    const eastHub = await eventually(async () => {
      const hub = (await east.api.get<{ bridges?: { tcpListeners?: object } }>('/api/v3/router/hub-config'))
        .body;
      return 'only-east-listener' in (hub.bridges?.tcpListeners ?? {}) ? hub : undefined;
    }, 'the east hub to hold its listener');
    expect(Object.keys(eastHub.bridges?.tcpListeners ?? {})).toEqual(['only-east-listener']);
  });

  it("refuse each other's tokens", async () => {
    // Act
    const westWithEastToken = await new ApiClient(west.runtime.url, east.runtime.adminToken).get(
      '/api/v3/services',
    );

    // Assess
    expect(westWithEastToken.status).toBe(401);
    expect((await west.api.get('/api/v3/services')).status).toBe(200);
  });
});
