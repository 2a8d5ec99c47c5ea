import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ChurnModel,
  churnMismatches,
  countByKind,
  createFleet,
  type Fleet,
  runChurn,
  type ServiceView,
} from '../support/churn.js';
import { ApiClient } from '../support/client.js';
import { type RuntimeProcess, spawnRuntime, waitForExit } from '../support/process.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';

/**
 * Ten clients create, retag, re-port and delete services for 30 s against a fleet of agents tagged
 * `all`, one token, several tokens, a bare tag and a near-miss tag, with agent services on an edge and an
 * interior backend. Afterwards every agent's listeners, every backend's connectors and the hub must
 * match the model of the acknowledged writes exactly.
 */

const CLIENTS = 10;
const SECONDS = 30;
const SETTLE_MS = 120_000;

/** Polls until the API shows the model, or the settle time is up; returns what still differs. */
async function settle(api: () => ApiClient, fleet: Fleet, model: ChurnModel) {
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    const problems = await churnMismatches(api(), fleet, model);
    if (problems.length === 0 || Date.now() > deadline) return problems;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

describe('churn from ten clients, no crash', () => {
  let t: TestRuntime;
  afterAll(async () => {
    await t?.stop();
  });

  it('leaves every router holding exactly what the acknowledged writes say (no periodic repair)', async () => {
    // Prepare: the periodic sweeper is off, so only the reconcile messages can converge the routers
    t = await startTestRuntime({ sweepIntervalMs: 3_600_000 });
    const fleet = await createFleet(t.api);
    const model = new ChurnModel();

    // Act
    await runChurn({ clients: CLIENTS, seconds: SECONDS, fleet, model, api: async () => t.api });
    const problems = await settle(() => t.api, fleet, model);

    // Assess
    expect(model.counts.unexpected, model.unexpected.join('\n')).toBe(0);
    expect(model.counts.create + model.counts.update + model.counts.delete).toBeGreaterThan(100);
    expect({ byKind: countByKind(problems), first: problems.slice(0, 20) }).toEqual({
      byKind: { service: 0, hub: 0, 'agent listener': 0, 'backend connector': 0 },
      first: [],
    });
  }, 300_000);
});

describe('churn from ten clients with three SIGKILLs of the runtime', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'fogbridge-churn-'));
  const started: RuntimeProcess[] = [];
  afterAll(async () => {
    for (const runtime of started) {
      runtime.child.kill('SIGKILL');
      await waitForExit(runtime.child);
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('converges after each restart to what the writes allow, on every router', async () => {
    // Prepare
    const start = async () => {
      const runtime = await spawnRuntime(dataDir, { SWEEP_INTERVAL_MS: '2000', PENDING_GRACE_MS: '5000' });
      started.push(runtime);
      return new ApiClient(runtime.url, runtime.adminToken);
    };
    let current: Promise<ApiClient> = start();
    const fleet = await createFleet(await current);
    const model = new ChurnModel();

    // Act: the runtime is killed at 7, 15 and 23 s and started again on the same data folder
    const kills = (async () => {
      for (const at of [7_000, 8_000, 8_000]) {
        await new Promise((resolve) => setTimeout(resolve, at));
        const victim = started.at(-1)!;
        let restarted!: (api: ApiClient) => void;
        current = new Promise((resolve) => {
          restarted = resolve;
        });
        victim.child.kill('SIGKILL');
        await waitForExit(victim.child);
        restarted(await start());
      }
    })();
    await runChurn({ clients: CLIENTS, seconds: SECONDS, fleet, model, api: () => current });
    await kills;
    const api = await current;
    const resolved = model.resolve(
      (await api.get<ServiceView[]>('/api/v3/services')).body.filter((s) => s.name.startsWith('churn-c')),
    );
    const problems = await settle(() => api, fleet, model);

    // Assess
    expect(model.counts.interrupted).toBeGreaterThan(0);
    expect(model.counts.unexpected, model.unexpected.join('\n')).toBe(0);
    expect(resolved).toEqual([]);
    expect({ byKind: countByKind(problems), first: problems.slice(0, 20) }).toEqual({
      byKind: { service: 0, hub: 0, 'agent listener': 0, 'backend connector': 0 },
      first: [],
    });
  }, 400_000);
});
