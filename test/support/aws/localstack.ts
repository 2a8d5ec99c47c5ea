import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { exitedWithin, freeServerPort } from '../processes.js';
import { ensurePythonTool, runLogged, withLockFile } from '../python-tools.js';

/**
 * LocalStack's SQS (`localstack-core` from PyPI) run in host mode, without Docker: one Python process on
 * a loopback port with only SQS enabled, as a third implementation of the SQS API for the contract tests.
 * It lives in a project-local virtualenv (`.venvs/localstack/`), created and filled on first use.
 *
 * Why this version and these pins (found by trying, on the machine's Python 3.11, without Docker):
 * - localstack-core 2026.3.0 and 4.14.0 declare Python >=3.10 but use Python 3.12 syntax (`class X[T]`,
 *   in 4.14.0 in the SQS provider itself) and 2026.3.0 also `warnings.deprecated` (3.13). 4.13.1 is the
 *   newest release that parses on 3.11.
 * - localstack-core leaves its dependencies unpinned, and today's releases break it (seen with 4.14.0;
 *   4.13.1 has only been run with the pins): cbor2 6 removed
 *   `cbor2._decoder` (imported by the request parser; plux swallows the ImportError and the runtime then
 *   reports "No component plugins found in namespace localstack.runtime.components"), and pyOpenSSL 26
 *   removed `X509.add_extensions` (used to create the gateway's self-signed certificate).
 * - localstack-twisted 26 imports `service_identity`, which nothing installs; the hypercorn gateway server
 *   (`GATEWAY_SERVER=hypercorn`) avoids Twisted altogether.
 */
export const LOCALSTACK_VERSION = '4.13.1';
const LOCALSTACK_PINS = ['cbor2<6', 'pyopenssl<26'];

export interface LocalStackServer {
  endpoint: string;
  stop(): Promise<void>;
}

function log(message: string): void {
  process.stderr.write(`[localstack] ${message}\n`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The virtualenv's python with localstack-core and the pins above installed (`.venvs/localstack/`). */
export async function ensureLocalStackInstalled(): Promise<string> {
  const supervisor = await ensurePythonTool(
    'localstack',
    `localstack-core[runtime]==${LOCALSTACK_VERSION}`,
    'localstack-supervisor',
  );
  const venv = dirname(dirname(supervisor));
  const python = join(venv, 'bin', 'python');
  // Written only after pip succeeded, so a half-finished pin step is redone.
  const pinned = `${LOCALSTACK_VERSION},${LOCALSTACK_PINS.join(',')}`;
  const marker = join(venv, `.pinned-${pinned.replace(/[^A-Za-z0-9.=,-]/g, '_')}`);
  if (existsSync(marker)) return python;
  await withLockFile('localstack', join(venv, '.pins.lock'), async () => {
    if (existsSync(marker)) return;
    await runLogged('localstack', python, [
      '-m',
      'pip',
      'install',
      '--disable-pip-version-check',
      '--quiet',
      ...LOCALSTACK_PINS,
    ]);
    closeSync(openSync(marker, 'w'));
  });
  return python;
}

async function sqsReady(endpoint: string): Promise<boolean> {
  try {
    const response = await fetch(`${endpoint}/_localstack/health`);
    if (!response.ok) {
      await response.arrayBuffer();
      return false;
    }
    const health = (await response.json()) as { services?: Record<string, string> };
    return health.services?.sqs === 'running' || health.services?.sqs === 'available';
  } catch {
    return false; // Not listening yet.
  }
}

async function startOnce(python: string, port: number): Promise<LocalStackServer | undefined> {
  // Everything LocalStack writes (certificate cache, temp and state folders) goes into a folder of this
  // run, removed on stop. OVERRIDE_IN_DOCKER=0: this sandbox looks like a container to LocalStack, which
  // would then write to /var/lib/localstack and /tmp/localstack.
  const root = mkdtempSync(join(tmpdir(), 'fogbridge-localstack-'));
  const address = `127.0.0.1:${port}`;
  const child = spawn(python, ['-m', 'localstack.runtime.main'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      PYTHONUNBUFFERED: '1',
      SERVICES: 'sqs',
      EAGER_SERVICE_LOADING: '1',
      GATEWAY_LISTEN: address,
      LOCALSTACK_HOST: address,
      GATEWAY_SERVER: 'hypercorn',
      // Queue URLs as http://127.0.0.1:<port>/queue/<region>/<account>/<name>, served by this process.
      SQS_ENDPOINT_STRATEGY: 'path',
      // No DNS server (it would bind port 53), no telemetry, no analytics events.
      DNS_ADDRESS: '0',
      LOCALSTACK_TELEMETRY: '0',
      DISABLE_EVENTS: '1',
      OVERRIDE_IN_DOCKER: '0',
      FILESYSTEM_ROOT: root,
      LOCALSTACK_VOLUME_DIR: join(root, 'volume'),
    },
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const endpoint = `http://${address}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      if (!(await exitedWithin(child, 10_000))) {
        child.kill('SIGKILL');
        await exitedWithin(child, 5_000);
      }
    }
    rmSync(root, { recursive: true, force: true });
  };
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await stop();
      if (/address already in use/i.test(output)) return undefined;
      throw new Error(`LocalStack exited with ${child.exitCode ?? child.signalCode}:\n${output}`);
    }
    if (await sqsReady(endpoint)) return { endpoint, stop };
    await sleep(250);
  }
  await stop();
  throw new Error(`LocalStack SQS did not answer on ${endpoint} within 120 s:\n${output}`);
}

/** Installs LocalStack if needed and starts it, SQS only, on a free loopback port. */
export async function startLocalStack(): Promise<LocalStackServer> {
  const python = await ensureLocalStackInstalled();
  for (let attempt = 0; attempt < 5; attempt++) {
    // The port is free when chosen but could be taken before LocalStack binds it: retry on that.
    const server = await startOnce(python, await freeServerPort());
    if (server) {
      log(`LocalStack ${LOCALSTACK_VERSION} (SQS only) listening on ${server.endpoint}`);
      return server;
    }
  }
  throw new Error('LocalStack could not bind a free port in 5 attempts');
}
