import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import dynalite from 'dynalite';
import { startFauxqs } from 'fauxqs';
import { apiGatewayAdapter } from './api-gateway.js';
import { setUpLocalAuth } from './auth.js';
import { ensureQueues, type QueueUrls } from './queues.js';
import { startSqsPoller } from './sqs-poller.js';

export interface LocalRuntimeOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  dataDir?: string;
  /** How often the sweeper re-drives lagging work after the start-up sweep. */
  sweepIntervalMs?: number;
  visibilityTimeoutSeconds?: number;
  workerConcurrency?: number;
  /** Extra environment for the handlers (CONTROL_PLANE, BRIDGE_PORTS_RANGE, ...). */
  env?: Record<string, string>;
}

export interface LocalRuntime {
  url: string;
  port: number;
  queues: QueueUrls;
  dynamodbEndpoint: string;
  sqsEndpoint: string;
  /** The admin token written to `<data>/admin.token` (undefined when an identity provider is configured). */
  adminToken: string | undefined;
  stop: () => Promise<void>;
}

let started = false;

/**
 * The whole product in one process: dynalite (persisted under the data folder) and fauxqs stand in
 * for DynamoDB and SQS, the real API handlers sit behind an API Gateway v2 adapter, and SQS pollers
 * drive the real worker handlers with Lambda's batch semantics. One runtime per process: the handlers
 * read their configuration from the environment once, as they do in Lambda.
 */
export async function startLocalRuntime(options: LocalRuntimeOptions = {}): Promise<LocalRuntime> {
  if (started) throw new Error('A local runtime is already running in this process');
  started = true;
  const dataDir = resolve(options.dataDir ?? '.fogbridge');
  mkdirSync(dataDir, { recursive: true });

  const dynamo = dynalite({
    path: resolve(dataDir, 'dynamodb'),
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
  });
  await new Promise<void>((done) => dynamo.listen(0, '127.0.0.1', () => done()));
  const dynamodbEndpoint = `http://127.0.0.1:${(dynamo.address() as AddressInfo).port}`;
  const fauxqs = await startFauxqs({ port: 0, logger: false });
  const sqsEndpoint = fauxqs.address;

  const maxReceiveCount = Number(options.env?.MAX_RECEIVE_COUNT ?? process.env.MAX_RECEIVE_COUNT ?? 5);
  Object.assign(process.env, {
    AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_ENDPOINT_URL_DYNAMODB: dynamodbEndpoint,
    AWS_ENDPOINT_URL_SQS: sqsEndpoint,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    TABLE_NAME: process.env.TABLE_NAME ?? 'fogbridge',
    ...options.env,
  });
  const region = process.env.AWS_REGION!;
  const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
  const sqs = new SQSClient({ region, endpoint: sqsEndpoint, credentials, useQueueUrlAsEndpoint: false });
  const queues = await ensureQueues(sqs, {
    visibilityTimeoutSeconds: options.visibilityTimeoutSeconds ?? 10,
    maxReceiveCount,
  });
  const adminToken = await setUpLocalAuth(dataDir, process.env);
  process.env.SERVICE_QUEUE_URL = queues.service;
  process.env.FOG_QUEUE_URL = queues.fog;
  await ensureTable(
    new DynamoDBClient({ region, endpoint: dynamodbEndpoint, credentials }),
    process.env.TABLE_NAME!,
  );

  // Imported only now: the handlers read the environment set above when they first run.
  const [
    openapi,
    agentFacing,
    services,
    agents,
    registry,
    router,
    status,
    serviceWorker,
    fogWorker,
    { sweep },
    { logger },
  ] = await Promise.all([
    import('../../functions/api/openapi.js'),
    import('../../functions/api/agent.js'),
    import('../../functions/api/services.js'),
    import('../../functions/api/agents.js'),
    import('../../functions/api/registry.js'),
    import('../../functions/api/router.js'),
    import('../../functions/api/status.js'),
    import('../../functions/workers/service-reconcile.js'),
    import('../../functions/workers/fog-reconcile.js'),
    import('../../shared/reconcile/sweeper.js'),
    import('../../shared/log/logger.js'),
  ]);

  const arnOf = async (url: string) =>
    (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] })))
      .Attributes!.QueueArn!;
  const onError = (error: unknown) => logger.error('local poller error', { error: error as Error });
  const concurrency = options.workerConcurrency ?? 4;
  const pollers = [
    startSqsPoller({
      sqs,
      queueUrl: queues.service,
      queueArn: await arnOf(queues.service),
      functionName: 'fogbridge-service-reconcile',
      handler: serviceWorker.handler,
      concurrency,
      batchSize: 10,
      onError,
    }),
    startSqsPoller({
      sqs,
      queueUrl: queues.fog,
      queueArn: await arnOf(queues.fog),
      functionName: 'fogbridge-fog-reconcile',
      handler: fogWorker.handler,
      concurrency,
      batchSize: 10,
      onError,
    }),
  ];

  // Queued messages do not survive a restart of the embedded SQS: the start-up sweep re-drives
  // everything that lags and re-converges every router.
  await sweep({ full: true });
  const sweepTimer = setInterval(() => {
    sweep({ full: false }).catch((error: unknown) => logger.error('sweep failed', { error: error as Error }));
  }, options.sweepIntervalMs ?? 30_000);
  sweepTimer.unref();

  const adapter = apiGatewayAdapter([
    { prefix: '/api/v3/openapi.json', functionName: 'fogbridge-api-openapi', handler: openapi.handler },
    { prefix: '/api/v3/agent/', functionName: 'fogbridge-api-agent', handler: agentFacing.handler },
    { prefix: '/api/v3/services', functionName: 'fogbridge-api-services', handler: services.handler },
    { prefix: '/api/v3/iofog', functionName: 'fogbridge-api-agents', handler: agents.handler },
    { prefix: '/api/v3/application', functionName: 'fogbridge-api-registry', handler: registry.handler },
    { prefix: '/api/v3/microservices', functionName: 'fogbridge-api-registry', handler: registry.handler },
    { prefix: '/api/v3/router', functionName: 'fogbridge-api-router', handler: router.handler },
    { prefix: '/api/v3/status', functionName: 'fogbridge-api-status', handler: status.handler },
  ]);
  const server: Server = createServer((request, response) => {
    adapter(request, response).catch(() => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ name: 'InternalError', message: 'Internal error' }));
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(options.port ?? 51121, options.host ?? '127.0.0.1', () => done());
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
    stop: async () => {
      clearInterval(sweepTimer);
      await new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      });
      await Promise.all(pollers.map((poller) => poller.stop()));
      await fauxqs.stop();
      await new Promise<void>((done) => dynamo.close(() => done()));
      started = false;
    },
  };
}

async function ensureTable(client: DynamoDBClient, tableName: string): Promise<void> {
  const { createTableInput } = await import('../../shared/store/table.js');
  try {
    await client.send(new DescribeTableCommand({ TableName: tableName }));
  } catch (error) {
    if ((error as Error).name !== 'ResourceNotFoundException') throw error;
    await client.send(new CreateTableCommand(createTableInput(tableName)));
  }
}
