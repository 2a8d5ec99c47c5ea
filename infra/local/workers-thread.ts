import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { isMainThread, type MessagePort, parentPort, Worker, workerData } from 'node:worker_threads';
import type { Config } from '../../shared/config.js';
import { createContext, disposeContext } from '../../shared/context.js';
import { parseAddressDenyList } from '../../shared/domain/hosts.js';
import { type LocalHookSettings, localHooks, pollerSqsClient } from './client-hooks.js';
import { MessagePortRequestHandler } from './emulator-transport.js';
import type { EmulatorsThread } from './emulators-thread.js';
import type { QueueUrls } from './queues.js';
import { startReconcileWorkers } from './reconcile-workers.js';
import { addUsage, resetUsage, type Usage, usage } from './usage.js';

/**
 * The reconcile workers in a thread of their own, as Lambda runs them in instances apart from the API's:
 * the reconciles a burst of requests starts no longer run in the event loop that answers the burst.
 * The thread builds its own context (configuration and clients) from the runtime's configuration.
 */
export interface WorkersThread {
  /** The thread's usage counters (the benchmark adds them up). */
  usage(): Promise<Usage>;
  resetUsage(): Promise<void>;
  stop(): Promise<void>;
}

export interface WorkerSettings {
  /** The API's requests in flight (a shared counter): the pollers wait while it is above 0. */
  apiInFlight?: Int32Array;
  queues: QueueUrls;
  concurrency: number;
  visibilityTimeoutSeconds: number;
  sweepIntervalMs: number;
  role?: 'all' | 'fog';
}

interface ThreadSettings {
  fogbridgeWorkersThread: WorkerSettings;
  hooks: LocalHookSettings;
  /** This thread's message ports to the embedded DynamoDB and SQS (see emulator-transport.ts). */
  dynamodbPort: MessagePort;
  sqsPort: MessagePort;
  /** The configuration, with the deny list as its source text (a BlockList does not cross threads). */
  config: Omit<Config, 'deniedResourceAddresses'> & { deniedResourceAddresses: string };
}

/** How much lower than the API the workers thread runs (a nice value; 19 is the lowest). */
const WORKERS_NICENESS = 10;

type Request = { id: number; kind: 'usage' | 'reset-usage' | 'stop' };
type Reply = { id: number; usage?: Usage } | { ready: true } | { failed: string };

/**
 * `count` workers threads: the first runs both queues and the sweep, the others more consumers of the
 * fog queue. Seen from the runtime as one (usage added up, stopped together).
 */
export async function startWorkersThreads(
  config: Config,
  hooks: LocalHookSettings,
  workers: WorkerSettings,
  count: number,
  emulators: Pick<EmulatorsThread, 'connectDynamodb' | 'connectSqs'>,
): Promise<WorkersThread> {
  const threads = await Promise.all(
    Array.from({ length: Math.max(1, count) }, (_, index) =>
      startWorkersThread(
        config,
        hooks,
        { ...workers, role: index === 0 ? 'all' : 'fog' },
        {
          dynamodbPort: emulators.connectDynamodb(),
          sqsPort: emulators.connectSqs(),
        },
      ),
    ),
  );
  return {
    usage: async () => (await Promise.all(threads.map((thread) => thread.usage()))).reduce(addUsage),
    resetUsage: async () => {
      await Promise.all(threads.map((thread) => thread.resetUsage()));
    },
    stop: async () => {
      await Promise.all(threads.map((thread) => thread.stop()));
    },
  };
}

async function startWorkersThread(
  config: Config,
  hooks: LocalHookSettings,
  workers: WorkerSettings,
  ports: { dynamodbPort: MessagePort; sqsPort: MessagePort },
): Promise<WorkersThread> {
  const denied = config.deniedResourceAddresses;
  const settings: ThreadSettings = {
    fogbridgeWorkersThread: workers,
    hooks,
    ...ports,
    config: {
      ...config,
      deniedResourceAddresses: [...denied.ranges.map((range) => range.entry), ...denied.names].join(','),
    },
  };
  // The thread runs this TypeScript module: it registers the TypeScript loader first (a loader given
  // to a worker on its command line does not apply to the worker's own entry module).
  const loader = import.meta.resolve('tsx/esm/api');
  const entry = `import(${JSON.stringify(loader)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(import.meta.url)}); });`;
  const worker = new Worker(entry, {
    eval: true,
    workerData: settings,
    transferList: [ports.dynamodbPort, ports.sqsPort],
  });
  await new Promise<void>((resolve, reject) => {
    worker.once('error', reject);
    worker.once('exit', (code) =>
      reject(new Error(`the workers thread exited with ${code} before starting`)),
    );
    worker.once('message', (reply: Reply) =>
      'failed' in reply
        ? reject(new Error(`the workers thread failed to start: ${reply.failed}`))
        : resolve(),
    );
  });
  worker.removeAllListeners('exit');
  worker.removeAllListeners('error');
  worker.on('error', (error) => process.stderr.write(`workers thread error: ${error.message}\n`));

  let nextId = 0;
  const pending = new Map<number, (reply: Extract<Reply, { id: number }>) => void>();
  worker.on('message', (reply: Reply) => {
    if (!('id' in reply)) return;
    pending.get(reply.id)?.(reply);
    pending.delete(reply.id);
  });
  const ask = (kind: Request['kind']) =>
    new Promise<Extract<Reply, { id: number }>>((resolve) => {
      const id = nextId++;
      pending.set(id, resolve);
      worker.postMessage({ id, kind } satisfies Request);
    });
  return {
    usage: async () => (await ask('usage')).usage!,
    resetUsage: async () => {
      await ask('reset-usage');
    },
    stop: async () => {
      await ask('stop');
      await worker.terminate();
    },
  };
}

async function runThread(port: NonNullable<typeof parentPort>, settings: ThreadSettings): Promise<void> {
  yieldToTheApi();
  const config: Config = {
    ...settings.config,
    deniedResourceAddresses: parseAddressDenyList(settings.config.deniedResourceAddresses),
    // A Buffer arrives as a plain Uint8Array.
    secrets: {
      ...settings.config.secrets,
      localKey: settings.config.secrets.localKey ? Buffer.from(settings.config.secrets.localKey) : undefined,
    },
  };
  const store = new MessagePortRequestHandler(settings.dynamodbPort);
  const queues = new MessagePortRequestHandler(settings.sqsPort);
  const context = createContext(
    config,
    localHooks(settings.hooks, { dynamodb: () => store, sqs: () => queues }),
  );
  const sqs = pollerSqsClient({ ...config, endpoint: config.endpoints.sqs }, queues);
  let workers: Awaited<ReturnType<typeof startReconcileWorkers>>;
  try {
    workers = await startReconcileWorkers({ sqs, context, ...settings.fogbridgeWorkersThread });
  } catch (error) {
    port.postMessage({ failed: (error as Error).message } satisfies Reply);
    return;
  }
  port.on('message', async (request: Request) => {
    const answer = (reply: Extract<Reply, { id: number }>) => port.postMessage(reply);
    switch (request.kind) {
      case 'usage':
        return answer({ id: request.id, usage });
      case 'reset-usage':
        resetUsage();
        return answer({ id: request.id });
      case 'stop':
        await workers.stop();
        sqs.destroy();
        disposeContext(context);
        return answer({ id: request.id });
    }
  });
  port.postMessage({ ready: true } satisfies Reply);
}

/**
 * Lowers this thread's scheduling priority (Linux: a thread has a nice value of its own, set through
 * its thread id): when every core is busy, answering the API goes first and the reconciles take what is
 * left, as they would on instances of their own in AWS. Elsewhere the thread keeps the process's
 * priority.
 */
function yieldToTheApi(): void {
  try {
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(threadId) && threadId > 0) setPriority(threadId, WORKERS_NICENESS);
  } catch {
    // Not Linux, or not permitted: the same priority as the API.
  }
}

if (!isMainThread && parentPort && (workerData as ThreadSettings | undefined)?.fogbridgeWorkersThread) {
  void runThread(parentPort, workerData as ThreadSettings);
}
