import { randomBytes } from 'node:crypto';
import type { Server } from 'node:net';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import dynalite from 'dynalite';
import { type Config, loadConfig } from '../../shared/config.js';
import { type AppContext, createContext, disposeContext, runInContext } from '../../shared/context.js';
import { type OperationObserver, observeOperation } from '../../shared/metrics/operations.js';
import { sqsClient } from '../../shared/queue/client.js';
import {
  type FogReconcileMessage,
  fogRequest,
  serviceReconcileMessage,
} from '../../shared/queue/messages.js';
import { reconcileFog } from '../../shared/reconcile/fog.js';
import { reconcileService } from '../../shared/reconcile/service.js';
import { createTableInput } from '../../shared/store/table.js';

/**
 * The reconcilers in process, without HTTP, pollers or threads: the real store (dynalite, one table per
 * world) and a queue that captures what is sent. A world runs product code in its own context; what the
 * commands and reconcilers ask for is captured and run, group by group in the order it was sent, as
 * the workers run it. A case reads: given rows (made by the same commands the API calls), when a
 * reconcile runs, then these items, these writes and these follow-up requests.
 */

const CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };
let store: { server: Server; endpoint: string } | undefined;
let tables = 0;

async function storeEndpoint(): Promise<string> {
  if (!store) {
    const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 }) as Server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address() as { port: number };
    store = { server, endpoint: `http://127.0.0.1:${address.port}` };
  }
  return store.endpoint;
}

export async function stopStore(): Promise<void> {
  await new Promise<void>((resolve) => (store ? store.server.close(() => resolve()) : resolve()));
  store = undefined;
}

/** A message a command or a reconcile sent. */
export type Sent =
  | { queue: 'service'; group: string; body: { name: string; generation: number } }
  | { queue: 'fog'; group: string; body: FogReconcileMessage };

/** What one reconcile of a message cost: its store and queue calls by command, and its counted events. */
export interface Measured {
  sent: Sent;
  calls: Record<string, number>;
  events: Record<string, number>;
}

export interface World {
  config: Config;
  /** Every message sent since the world was made (or since `forget`). */
  sent: Sent[];
  run<T>(work: () => Promise<T>): Promise<T>;
  /** Runs every captured message not run yet, and what they send, until nothing is left. */
  settle(options?: { limit?: number }): Promise<void>;
  /** Runs only the captured messages `pick` selects (the others stay queued). */
  runQueued(pick: (sent: Sent) => boolean): Promise<Sent[]>;
  /** As `runQueued`, each message measured through the operation observer the workers report to. */
  measureQueued(pick: (sent: Sent) => boolean): Promise<Measured[]>;
  /** The messages sent and not run yet. */
  queued(): Sent[];
  /** Every item of the world's table. */
  items(): Promise<Record<string, unknown>[]>;
  dispose(): void;
}

/**
 * A fresh table and context; `env` as the settings a deployment would set. With `from`, the table starts
 * as a copy of that world's (its fleet's certificates made once, not per case) and shares its settings.
 */
export async function newWorld(
  env: Record<string, string> = {},
  from?: World,
  overrides: Partial<Config> = {},
): Promise<World> {
  const endpoint = await storeEndpoint();
  const tableName = `reconcile-${process.pid}-${++tables}`;
  const base = from?.config ?? loadConfig({ LOG_LEVEL: 'SILENT', ...env });
  const config: Config = {
    ...base,
    tableName,
    endpoints: { dynamodb: endpoint, sqs: 'http://127.0.0.1:9', kms: undefined },
    credentials: CREDENTIALS,
    secrets: from?.config.secrets ?? { kmsKeyId: undefined, localKey: randomBytes(32) },
    serviceQueueUrl: 'http://queue.local/service.fifo',
    fogQueueUrl: 'http://queue.local/fog.fifo',
    ...overrides,
  };
  const raw = new DynamoDBClient({ region: config.region, endpoint, credentials: CREDENTIALS });
  await raw.send(new CreateTableCommand(createTableInput(tableName)));
  if (from) await copyItems(await from.items(), DynamoDBDocumentClient.from(raw), tableName);
  let measuring: Measured | undefined;
  const context: AppContext = createContext(config, { observer: recorder(() => measuring) });
  const sent: Sent[] = [];
  let ran = 0;
  // The capturing queue answers before the client's measuring middleware sees a call: it counts them.
  runInContext(context, () =>
    captureQueue(sent, (command) => {
      if (measuring) measuring.calls[command] = (measuring.calls[command] ?? 0) + 1;
    }),
  );

  const runOne = async (message: Sent) => {
    await runInContext(context, () =>
      observeOperation(message.queue, async () => {
        if (message.queue === 'service') await reconcileService(serviceReconcileMessage.parse(message.body));
        else await reconcileFog(fogRequest.parse(message.body));
      }),
    );
  };
  const world: World = {
    config,
    sent,
    run: (work) => runInContext(context, work),
    async settle({ limit = 500 } = {}) {
      for (let count = 0; ran < sent.length; count++) {
        if (count >= limit) throw new Error(`still sending after ${limit} reconciles`);
        await runOne(sent[ran++]!);
      }
    },
    async runQueued(pick) {
      const chosen = sent.slice(ran).filter(pick);
      for (const message of chosen) await runOne(message);
      const rest = sent.slice(ran).filter((message) => !chosen.includes(message));
      sent.splice(ran, sent.length - ran, ...chosen, ...rest);
      ran += chosen.length;
      return chosen;
    },
    async measureQueued(pick) {
      const measured: Measured[] = [];
      const chosen = sent.slice(ran).filter(pick);
      for (const message of chosen) {
        measuring = { sent: message, calls: {}, events: {} };
        try {
          await world.runQueued((queued) => queued === message);
          measured.push(measuring);
        } finally {
          measuring = undefined;
        }
      }
      return measured;
    },
    queued: () => sent.slice(ran),
    async items() {
      const client = DynamoDBDocumentClient.from(raw);
      const found: Record<string, unknown>[] = [];
      let ExclusiveStartKey: Record<string, unknown> | undefined;
      do {
        const page = await client.send(new ScanCommand({ TableName: tableName, ExclusiveStartKey }));
        found.push(...(page.Items ?? []));
        ExclusiveStartKey = page.LastEvaluatedKey;
      } while (ExclusiveStartKey);
      return found;
    },
    dispose() {
      disposeContext(context);
      raw.destroy();
    },
  };
  return world;
}

/** Counts the calls and events of the message being measured, if any (the others pass unrecorded). */
function recorder(current: () => Measured | undefined): OperationObserver {
  return {
    call(figures) {
      const measured = current();
      if (measured) measured.calls[figures.command] = (measured.calls[figures.command] ?? 0) + 1;
    },
    operation(_kind, figures) {
      const measured = current();
      if (measured) measured.events = figures.events;
    },
    step() {},
  };
}

/**
 * The world's SQS client answers every send itself and records the message: the capturing queue. The
 * product's client is used as it is; only its transport is replaced, from outside.
 */
function captureQueue(sent: Sent[], called: (command: string) => void): void {
  const client = sqsClient();
  client.middlewareStack.add(
    (_next, context) => async (args) => {
      called(String(context.commandName));
      const input = args.input as {
        QueueUrl: string;
        MessageBody?: string;
        MessageGroupId?: string;
        Entries?: { Id: string; MessageBody: string; MessageGroupId: string }[];
      };
      const queue = input.QueueUrl.includes('service') ? 'service' : 'fog';
      const entries = input.Entries ?? [
        { Id: '0', MessageBody: input.MessageBody!, MessageGroupId: input.MessageGroupId! },
      ];
      for (const entry of entries) {
        sent.push({ queue, group: entry.MessageGroupId, body: JSON.parse(entry.MessageBody) } as Sent);
      }
      return {
        output: {
          $metadata: {},
          MessageId: 'captured',
          Successful: entries.map((entry) => ({ Id: entry.Id, MessageId: 'captured' })),
          Failed: [],
        },
      } as never;
    },
    { step: 'initialize', name: 'capturingQueue', priority: 'high' },
  );
}

async function copyItems(
  items: Record<string, unknown>[],
  client: DynamoDBDocumentClient,
  tableName: string,
): Promise<void> {
  for (let i = 0; i < items.length; i += 25) {
    let pending: Record<string, unknown[]> | undefined = {
      [tableName]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })),
    };
    while (pending && Object.keys(pending).length > 0) {
      const result = await client.send(new BatchWriteCommand({ RequestItems: pending as never }));
      pending = result.UnprocessedItems as typeof pending;
    }
  }
}
