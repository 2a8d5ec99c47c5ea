import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

/**
 * A TCP port that was free a moment ago, for a server the test starts later. Ports the kernel hands out
 * (listeners on port 0, every outgoing connection's local port) come from the ephemeral range (32768–60999
 * on Linux by default), so a port taken from there can be someone's connection by the time a server
 * binds it, minutes later. These come from below that range instead, from a slice of their own for each
 * test worker (files in one worker run one after another), never the same one twice in a process.
 */
export async function freeServerPort(): Promise<number> {
  for (let tries = 0; tries < PORTS_PER_WORKER; tries++) {
    const port = nextPortOfThisWorker();
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port in ${sliceStart()}–${sliceStart() + PORTS_PER_WORKER - 1}`);
}

const PORTS_PER_WORKER = 1_000;
const FIRST_PORT = 20_000;
let handedOut = Math.floor(Math.random() * PORTS_PER_WORKER);

/** Worker n of the test pool (1-based) gets ports 20,000 + (n − 1) × 1,000 onwards; others share slice 8. */
function sliceStart(): number {
  const worker = Number(process.env.VITEST_POOL_ID);
  const slice = Number.isInteger(worker) && worker >= 1 && worker <= 7 ? worker - 1 : 7;
  return FIRST_PORT + slice * PORTS_PER_WORKER;
}

function nextPortOfThisWorker(): number {
  handedOut = (handedOut + 1) % PORTS_PER_WORKER;
  return sliceStart() + handedOut;
}

/** Whether a server can listen on `port` on every address (as nats-server and kube-apiserver do). */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '0.0.0.0', () => server.close(() => resolve(true)));
  });
}

/** Resolves true when `child` has exited (or had already), false after `ms`. */
export function exitedWithin(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** Whether a process with this pid exists (one we may not signal counts). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Runs `work` over `items` with `clients` concurrent workers, each taking the next item. */
export async function withClients<T, R>(
  items: T[],
  clients: number,
  work: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await work(items[index]!, index);
      }
    }),
  );
  return results;
}
