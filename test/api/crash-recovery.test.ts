import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { afterAll, describe, expect, it } from 'vitest';
import { startLocalRuntime } from '../../infra/local/runtime.js';
import { createHub } from '../fixtures/world.js';
import { ApiClient } from '../support/client.js';
import { type RuntimeProcess, spawnRuntime, waitForExit } from '../support/process.js';

type Service = { name: string; bridgePort: number; provisioningStatus: string };
type RouterConfig = { bridges?: { tcpListeners?: Record<string, { port: string }> } };

const QUIET = { LOG_LEVEL: 'ERROR' };
const dataDir = mkdtempSync(join(tmpdir(), 'fogbridge-crash-'));
const running: RuntimeProcess[] = [];

afterAll(async () => {
  for (const runtime of running) {
    runtime.child.kill('SIGKILL');
    await waitForExit(runtime.child);
  }
  rmSync(dataDir, { recursive: true, force: true });
});

describe('a runtime killed during a burst of creates', () => {
  it('converges every service after a restart; none stays pending', async () => {
    // Prepare
    const first = await spawnRuntime(dataDir);
    running.push(first);
    const api = new ApiClient(first.url, first.adminToken);
    await createHub(api);
    const names = Array.from({ length: 120 }, (_, i) => `burst-${i}`);
    let sent = 0;
    const acknowledged: string[] = [];

    // Act: 12 clients create services; the process is killed with SIGKILL part-way through
    const burst = Promise.all(
      Array.from({ length: 12 }, async (_, client) => {
        for (let i = client; i < names.length; i += 12) {
          sent++;
          try {
            const response = await api.post('/api/v3/services', {
              name: names[i],
              type: 'external',
              resource: `${names[i]}.example.com`,
              targetPort: 80,
            });
            if (response.status === 201) acknowledged.push(names[i]!);
          } catch {
            return; // the connection died with the process
          }
        }
      }),
    );
    while (sent < 40) await new Promise((resolve) => setTimeout(resolve, 5));
    first.child.kill('SIGKILL');
    await waitForExit(first.child);
    await burst;
    // The restarted runtime re-drives at start-up; its periodic sweeper runs often here so that anything
    // a loaded machine leaves lagging is re-driven well within the wait below.
    const second = await spawnRuntime(dataDir, { SWEEP_INTERVAL_MS: '2000', PENDING_GRACE_MS: '5000' });
    running.push(second);
    const restarted = new ApiClient(second.url, second.adminToken);

    // Assess
    await expect
      .poll(
        async () =>
          (await restarted.get<(Service & { provisioningError: string | null })[]>('/api/v3/services')).body
            .filter((s) => s.provisioningStatus !== 'ready')
            .map(
              (s) => `${s.name}: ${s.provisioningStatus} ${s.provisioningError ?? ''} (port ${s.bridgePort})`,
            ),
        { timeout: 120_000, interval: 250 },
      )
      .toEqual([]);
    const services = (await restarted.get<Service[]>('/api/v3/services')).body;
    // Every create the client saw acknowledged survived; interrupted ones converged or never existed.
    expect(acknowledged.length).toBeGreaterThan(0);
    expect(services.map((service) => service.name)).toEqual(expect.arrayContaining(acknowledged));
    expect(new Set(services.map((service) => service.bridgePort)).size).toBe(services.length);
    const hub = (await restarted.get<RouterConfig>('/api/v3/router/hub-config')).body;
    expect(Object.keys(hub.bridges?.tcpListeners ?? {}).sort()).toEqual(
      services.map((s) => `${s.name}-listener`).sort(),
    );
    for (const service of services) {
      expect(hub.bridges?.tcpListeners?.[`${service.name}-listener`]?.port).toBe(String(service.bridgePort));
    }
  });
});

describe('index entries a kill left behind in the embedded store', () => {
  it('are rebuilt at start-up: a lost entry comes back, a stray one goes', async () => {
    // Prepare: three services, then the runtime stops and the store is edited the way a kill between an
    // item write and its index writes leaves it.
    const folder = mkdtempSync(join(tmpdir(), 'fogbridge-reindex-'));
    const first = await startLocalRuntime({ host: '127.0.0.1', port: 0, dataDir: folder, env: QUIET });
    const api = new ApiClient(first.url, first.adminToken);
    await createHub(api);
    for (const name of ['kept', 'unlisted', 'ghost'])
      expect(
        (
          await api.post('/api/v3/services', {
            name,
            type: 'external',
            resource: `${name}.example.com`,
            targetPort: 80,
          })
        ).status,
      ).toBe(201);
    await first.stop();
    const store = new Level<string, { PK?: { S?: string } }>(join(folder, 'dynamodb'), {
      valueEncoding: 'json',
    });
    for await (const [key, value] of store.iterator()) {
      // 'unlisted' lost its by-kind index entry; 'ghost' kept its index entries but lost the item itself.
      if (key.startsWith('index-global~') && key.includes('~GSI1~') && value.PK?.S === 'SVC#unlisted')
        await store.del(key);
      if (key.startsWith('item-') && value.PK?.S === 'SVC#ghost') await store.del(key);
    }
    await store.close();

    // Act
    const second = await startLocalRuntime({ host: '127.0.0.1', port: 0, dataDir: folder, env: QUIET });
    const listed = await new ApiClient(second.url, second.adminToken).get<Service[]>('/api/v3/services');
    await second.stop();
    rmSync(folder, { recursive: true, force: true });

    // Assess
    expect(listed.body.map((service) => service.name)).toEqual(['kept', 'unlisted']);
  });
});
