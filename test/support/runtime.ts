import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type LocalRuntime, type LocalRuntimeOptions, startLocalRuntime } from '../../infra/local/runtime.js';
import { runInContext } from '../../shared/context.js';
import { ApiClient } from './client.js';

export interface TestRuntime {
  runtime: LocalRuntime;
  api: ApiClient;
  dataDir: string;
  /** Runs product code from the test as this runtime's own handlers run (its store, queues, settings). */
  inRuntime: <T>(work: () => T) => T;
  stop: () => Promise<void>;
}

/** The real local runtime on a free port with a throwaway data folder. */
export async function startTestRuntime(options: LocalRuntimeOptions = {}): Promise<TestRuntime> {
  const dataDir = mkdtempSync(join(tmpdir(), 'fogbridge-test-'));
  const runtime = await startLocalRuntime({
    host: '127.0.0.1',
    port: 0,
    dataDir,
    visibilityTimeoutSeconds: 2,
    sweepIntervalMs: 5_000,
    ...options,
    env: { LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? 'ERROR', ...options.env },
  });
  return {
    runtime,
    api: new ApiClient(runtime.url, runtime.adminToken),
    dataDir,
    inRuntime: (work) => runInContext(runtime.context, work),
    stop: async () => {
      await runtime.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
