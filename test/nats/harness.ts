// Test harness: a REAL nats-server, built from the Go module github.com/nats-io/nats-server/v2 at the
// version the seeds' image carries (2.15) and cached under `${FOGBRIDGE_CACHE_DIR ?? ~/.cache/fogbridge}/
// nats-server-<version>/` (about a minute to build the first time on 2 cores; later runs start at once).
//
// Environment:
//   FOGBRIDGE_CACHE_DIR      where built binaries are cached (default ~/.cache/fogbridge)
//   FOGBRIDGE_NATS_LOG=1     stream each server's log to stderr (it is always kept in its folder)
//   GO                       the go command to build with (default `go` on PATH)
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { acquireLock, cacheRoot, run, sleep } from '../support/go-build.js';
import { exitedWithin } from '../support/processes.js';

export const NATS_SERVER_MODULE = 'github.com/nats-io/nats-server/v2';
export const NATS_SERVER_VERSION = 'v2.15.2';

/** Builds nats-server unless this version is cached; returns its path. */
export async function ensureNatsServerBinary(): Promise<string> {
  const dir = join(cacheRoot(), `nats-server-${NATS_SERVER_VERSION}`);
  const binary = join(dir, 'nats-server');
  if (existsSync(binary)) return binary;
  await mkdir(dir, { recursive: true });
  const release = await acquireLock(join(dir, 'build.lock'), 'nats-server');
  try {
    if (existsSync(binary)) return binary;
    const gobin = join(dir, `bin-${process.pid}`);
    process.stderr.write(
      `[nats-harness] building ${NATS_SERVER_MODULE}@${NATS_SERVER_VERSION} into ${dir}\n`,
    );
    const started = Date.now();
    await run(
      process.env.GO ?? 'go',
      ['install', '-trimpath', `${NATS_SERVER_MODULE}@${NATS_SERVER_VERSION}`],
      {
        cwd: dir,
        env: { ...process.env, GOBIN: gobin, GOFLAGS: '-buildvcs=false' },
      },
    );
    await rename(join(gobin, 'nats-server'), binary);
    process.stderr.write(`[nats-harness] built ${binary} in ${Math.round((Date.now() - started) / 1000)}s\n`);
    return binary;
  } finally {
    await release();
  }
}

export interface NatsServerProcess {
  /** The process id (a restart is a new one). */
  pid: number;
  /** Its log so far (stdout and stderr). */
  log(): string;
  /** `nats-server --signal reload`: SIGHUP, the server re-reads its config file. */
  reload(): void;
  /** A monitoring endpoint's JSON (`/varz`, `/routez`, `/leafz`, `/accountz?acc=…`). */
  monitor<T = Record<string, unknown>>(path: string): Promise<T>;
  stop(): Promise<void>;
}

/** Starts `nats-server -c <configFile>` and waits for its monitoring port to answer. */
export async function startNatsServer(
  binary: string,
  configFile: string,
  monitorPort: number,
  logFile: string,
): Promise<NatsServerProcess> {
  const child: ChildProcess = spawn(binary, ['-c', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const file = createWriteStream(logFile);
  for (const stream of [child.stdout!, child.stderr!]) {
    stream.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      file.write(chunk);
      if (process.env.FOGBRIDGE_NATS_LOG === '1') process.stderr.write(chunk);
    });
  }
  const monitor = async <T>(path: string): Promise<T> => {
    const response = await fetch(`http://127.0.0.1:${monitorPort}${path}`, {
      signal: AbortSignal.timeout(5_000),
    });
    return (await response.json()) as T;
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`nats-server -c ${configFile} did not become healthy:\n${output.slice(-4000)}`);
    }
    if (child.exitCode !== null) {
      throw new Error(`nats-server -c ${configFile} exited with ${child.exitCode}:\n${output.slice(-4000)}`);
    }
    // Monitoring answers once the server listens; /healthz waits for a clustered JetStream to form,
    // which needs the other servers started too.
    const listening = await monitor<{ server_id?: string }>('/varz').then(
      (body) => typeof body.server_id === 'string',
      () => false,
    );
    if (listening) break;
    await sleep(100);
  }
  return {
    pid: child.pid!,
    log: () => output,
    reload: () => {
      child.kill('SIGHUP');
    },
    monitor,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        if (!(await exitedWithin(child, 10_000))) child.kill('SIGKILL');
      }
      file.end();
    },
  };
}
