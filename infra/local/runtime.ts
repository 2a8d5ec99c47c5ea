import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import * as openapi from '../../functions/api/openapi.js';
import { type Config, loadConfig } from '../../shared/config.js';
import { type AppContext, createContext, disposeContext, runInContext } from '../../shared/context.js';
import { logger } from '../../shared/log/logger.js';
import { sweep } from '../../shared/reconcile/sweeper.js';
import { createTableInput } from '../../shared/store/table.js';
import { answerMalformedRequests, apiGatewayAdapter, type HttpHandler } from './api-gateway.js';
import { ensureSecretsKey, setUpLocalAuth } from './auth.js';
import { type LocalHookSettings, localHooks, pollerSqsClient } from './client-hooks.js';
import { MessagePortRequestHandler } from './emulator-transport.js';
import { startEmulatorsThread } from './emulators-thread.js';
import { ensureQueues, type QueueUrls } from './queues.js';
import { startReconcileWorkers } from './reconcile-workers.js';
import { rebuildIndexEntries } from './reindex.js';
import { type InjectedLatency, injectedLatencyFrom } from './settings.js';
import { startWorkersThreads, type WorkersThread } from './workers-thread.js';

export interface LocalRuntimeOptions {
  /** The configuration to start from (`npm start`: the process environment); else built from `env`. */
  config?: Config;
  /** Settings as environment variables (CONTROL_PLANE, BRIDGE_PORTS_RANGE, ...), when `config` is not given. */
  env?: Record<string, string>;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  dataDir?: string;
  /** How often the sweeper re-drives lagging work after the start-up sweep. */
  sweepIntervalMs?: number;
  visibilityTimeoutSeconds?: number;
  workerConcurrency?: number;
  /**
   * The reconcile workers in a thread of their own (`npm start`, the benchmark), rather than in the
   * API's event loop; tests that arm faults in-process keep them in it.
   */
  workersThread?: boolean;
  /** Measure every operation into the usage counters (infra/local/usage.ts); the benchmark reads them. */
  measureOperations?: boolean;
  /** A delay before every DynamoDB / SQS call; else FOGBRIDGE_INJECT_LATENCY from `env` or the process. */
  injectedLatency?: InjectedLatency;
  /**
   * The time the runtime's handlers see (epoch milliseconds), for a test that moves it; the workers see
   * it only when they run in the API's thread (without `workersThread`).
   */
  clock?: () => number;
}

export interface LocalRuntime {
  url: string;
  port: number;
  queues: QueueUrls;
  dynamodbEndpoint: string;
  sqsEndpoint: string;
  /** The admin token written to `<data>/admin.token` (undefined when an identity provider is configured). */
  adminToken: string | undefined;
  /** The context every handler of this runtime runs in (its configuration and clients). */
  context: AppContext;
  /** The workers thread, when the workers run in one (the benchmark adds up its usage counters). */
  workersThread: WorkersThread | undefined;
  stop: () => Promise<void>;
}

/**
 * Workers threads (`workersThread`): one with both queues and the sweep, one more consumer of the fog
 * queue. A fan-out to 1,000 agents keeps one thread's event loop busy with the SDK's work per call;
 * a second spreads it over the second core (S2: the last agent told in 3.0–3.3 s rather than 3.3–4.3 s).
 */
const WORKERS_THREADS = 2;

const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };

/**
 * The whole product in one process: dynalite (persisted under the data folder) and fauxqs stand in for
 * DynamoDB and SQS, each in a worker thread of its own, the real API handlers sit behind an API Gateway v2
 * adapter, and SQS pollers drive the real worker handlers with Lambda's batch semantics (in the API's
 * thread, or with `workersThread` in a third thread). Every invocation runs in this runtime's
 * own context (configuration and clients), so several runtimes can share one process.
 */
export async function startLocalRuntime(options: LocalRuntimeOptions = {}): Promise<LocalRuntime> {
  const base = options.config ?? loadConfig(options.env ?? {});
  const dataDir = resolve(options.dataDir ?? base.local.dataDir);
  mkdirSync(dataDir, { recursive: true });

  const { region } = base;
  const emulators = await startEmulatorsThread(resolve(dataDir, 'dynamodb'), region);
  const { dynamodbEndpoint, sqsEndpoint } = emulators;

  const sqs = pollerSqsClient(
    { region, endpoint: sqsEndpoint, credentials: LOCAL_CREDENTIALS },
    new MessagePortRequestHandler(emulators.connectSqs()),
  );
  const visibilityTimeoutSeconds = options.visibilityTimeoutSeconds ?? 10;
  const queues = await ensureQueues(sqs, {
    visibilityTimeoutSeconds,
    maxReceiveCount: base.maxReceiveCount,
  });
  const { auth, adminToken } = await setUpLocalAuth(dataDir, base.auth);
  const config: Config = {
    ...base,
    endpoints: { dynamodb: dynamodbEndpoint, sqs: sqsEndpoint, kms: undefined },
    // A KMS key set in the environment wins; otherwise the data folder's own key seals private keys.
    secrets: base.secrets.kmsKeyId
      ? base.secrets
      : { kmsKeyId: undefined, localKey: ensureSecretsKey(dataDir) },
    credentials: LOCAL_CREDENTIALS,
    serviceQueueUrl: queues.service,
    fogQueueUrl: queues.fog,
    auth,
  };
  const hookSettings: LocalHookSettings = {
    region,
    injectedLatency: options.injectedLatency ?? injectedLatencyFrom(options.env ?? process.env),
    measureOperations: options.measureOperations ?? false,
  };
  const context = createContext(config, {
    ...localHooks(hookSettings, {
      dynamodb: () => new MessagePortRequestHandler(emulators.connectDynamodb()),
      sqs: () => new MessagePortRequestHandler(emulators.connectSqs()),
    }),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const dynamoClient = new DynamoDBClient({
    region,
    endpoint: dynamodbEndpoint,
    credentials: LOCAL_CREDENTIALS,
  });
  // A table that was already there may hold what a killed process left half-written.
  if (!(await ensureTable(dynamoClient, config.tableName))) {
    const strayIndexEntries = await rebuildIndexEntries(dynamoClient, config.tableName);
    if (strayIndexEntries > 0)
      runInContext(context, () => logger.warn('removed stray index entries', { strayIndexEntries }));
  }
  dynamoClient.destroy();

  // Queued messages do not survive a restart of the embedded SQS: the start-up sweep re-drives
  // everything that lags and re-converges every router.
  await runInContext(context, () => sweep({ full: true }));
  // API requests in flight, shared with the workers threads: their pollers wait while the API answers
  // (see `apiInFlight` in sqs-poller.ts).
  const apiInFlight = new Int32Array(new SharedArrayBuffer(4));
  const workerSettings = {
    apiInFlight,
    queues,
    concurrency: options.workerConcurrency ?? 4,
    visibilityTimeoutSeconds,
    sweepIntervalMs: options.sweepIntervalMs ?? base.local.sweepIntervalMs,
  };
  const thread = options.workersThread
    ? await startWorkersThreads(config, hookSettings, workerSettings, WORKERS_THREADS, emulators)
    : undefined;
  const workers = thread ?? (await startReconcileWorkers({ sqs, context, ...workerSettings }));

  const inContext =
    <E, R>(handler: (event: E, lambdaContext: never) => Promise<R>) =>
    (event: E, lambdaContext: never) =>
      runInContext(context, () => handler(event, lambdaContext));
  const adapter = apiGatewayAdapter(
    openapi.apiFunctions().map((fn) => ({
      functionName: `fogbridge-api-${fn.name}`,
      routes: fn.routes,
      handler: inContext(fn.handler) as HttpHandler,
    })),
  );
  const server: Server = createServer((request, response) => {
    Atomics.add(apiInFlight, 0, 1);
    response.once('close', () => Atomics.sub(apiInFlight, 0, 1));
    adapter(request, response).catch(() => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ name: 'InternalError', message: 'Internal error' }));
    });
  });
  server.keepAliveTimeout = 5_000;
  answerMalformedRequests(server);
  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(options.port ?? base.local.port, options.host ?? base.local.host, () => done());
  });
  const address = server.address() as AddressInfo;
  const host = address.address.includes(':') ? `[${address.address}]` : address.address;

  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    queues,
    dynamodbEndpoint,
    sqsEndpoint,
    adminToken,
    context,
    workersThread: thread,
    stop: async () => {
      await new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      });
      await workers.stop();
      await emulators.stop();
      sqs.destroy();
      disposeContext(context);
    },
  };
}

/** Creates the table unless it exists; true when it was created (so it is empty). */
async function ensureTable(client: DynamoDBClient, tableName: string): Promise<boolean> {
  try {
    await client.send(new DescribeTableCommand({ TableName: tableName }));
    return false;
  } catch (error) {
    if ((error as Error).name !== 'ResourceNotFoundException') throw error;
    await client.send(new CreateTableCommand(createTableInput(tableName)));
    // The embedded store activates a new table on a timer; nothing may read it before.
    await waitUntilTableExists(
      { client, maxWaitTime: 10, minDelay: 1, maxDelay: 1 },
      { TableName: tableName },
    );
    return true;
  }
}
