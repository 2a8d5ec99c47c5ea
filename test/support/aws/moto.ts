import { spawn } from 'node:child_process';
import { exitedWithin, freeServerPort } from '../processes.js';
import { ensurePythonTool } from '../python-tools.js';

/**
 * moto's standalone server (`moto[server]` from PyPI) as a second, independent implementation of the
 * DynamoDB and SQS APIs for the contract tests. It lives in a project-local virtualenv, created and
 * filled on first use and reused afterwards.
 */
export const MOTO_VERSION = '5.2.5';

export interface MotoServer {
  endpoint: string;
  stop(): Promise<void>;
}

/** moto_server from a project-local virtualenv (`.venvs/moto/`), installed on first use. */
export function ensureMotoInstalled(): Promise<string> {
  return ensurePythonTool('moto', `moto[server]==${MOTO_VERSION}`, 'moto_server');
}

function log(message: string): void {
  process.stderr.write(`[moto] ${message}\n`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function startOnce(motoServer: string, port: number): Promise<MotoServer | undefined> {
  const child = spawn(motoServer, ['-H', '127.0.0.1', '-p', String(port)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PYTHONUNBUFFERED: '1' },
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const endpoint = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    if (!(await exitedWithin(child, 5_000))) {
      child.kill('SIGKILL');
      await exitedWithin(child, 5_000);
    }
  };
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      if (/address already in use/i.test(output)) return undefined;
      throw new Error(`moto_server exited with ${child.exitCode ?? child.signalCode}:\n${output}`);
    }
    try {
      // moto's own management API answers once the server is up.
      const response = await fetch(`${endpoint}/moto-api/data.json`);
      await response.arrayBuffer();
      if (response.ok) return { endpoint, stop };
    } catch {
      // Not listening yet.
    }
    await sleep(200);
  }
  await stop();
  throw new Error(`moto_server did not answer on ${endpoint} within 60 s:\n${output}`);
}

/** Installs moto if needed and starts `moto_server` on a free loopback port. */
export async function startMoto(): Promise<MotoServer> {
  const motoServer = await ensureMotoInstalled();
  for (let attempt = 0; attempt < 5; attempt++) {
    // The port is free when chosen but could be taken before moto binds it: retry on that.
    const server = await startOnce(motoServer, await freeServerPort());
    if (server) {
      log(`moto_server listening on ${server.endpoint}`);
      return server;
    }
  }
  throw new Error('moto_server could not bind a free port in 5 attempts');
}
