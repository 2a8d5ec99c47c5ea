import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

export interface RuntimeProcess {
  child: ChildProcess;
  url: string;
  /** The admin token the runtime wrote to `<data>/admin.token` at start. */
  adminToken: string;
  output: () => string;
}

/** `npm start`'s entry point as a separate process (so it can be killed with SIGKILL). */
export async function spawnRuntime(
  dataDir: string,
  env: Record<string, string> = {},
): Promise<RuntimeProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'infra/local/main.ts'], {
    cwd: repoRoot,
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      FOGBRIDGE_DATA_DIR: dataDir,
      POWERTOOLS_LOG_LEVEL: 'ERROR',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`runtime did not start:\n${output}`)), 60_000);
    const check = () => {
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout?.on('data', check);
    child.once('exit', (code) => reject(new Error(`runtime exited with ${code}:\n${output}`)));
  });
  const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  return { child, url, adminToken, output: () => output };
}

export function waitForExit(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
  });
}
