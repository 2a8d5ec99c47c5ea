import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  ScanCommand,
} from '@aws-sdk/lib-dynamodb';
import type { Usage } from '../infra/local/usage.js';
import { mapWithConcurrency } from '../shared/concurrency.js';
import type { ApiClient } from '../test/support/client.js';

/** Percentile of a list of numbers (nearest rank). */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

import { withClients } from '../test/support/processes.js';

export { withClients };

/**
 * What a scenario may ask of the runtime's process from outside it (bench/runtime-process.ts): its usage
 * counters, a reset of them, one sweep, and the drift-check window.
 */
export class RuntimeControl {
  constructor(private readonly url: string) {}

  private async call<T>(method: 'GET' | 'POST', path: string): Promise<T> {
    const response = await fetch(`${this.url}${path}`, { method });
    if (!response.ok)
      throw new Error(`runtime control ${method} ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  }

  usage(): Promise<Usage> {
    return this.call('GET', '/usage');
  }

  async resetUsage(): Promise<void> {
    await this.call('POST', '/usage/reset');
  }

  sweep(): Promise<{ drifted: number; driftedServices: number }> {
    return this.call('POST', '/sweep');
  }

  settings(): Promise<{ driftCheckRouters: number }> {
    return this.call('GET', '/settings');
  }
}

/** The routes the tables name by what they do. */
const OPERATION_NAMES: Record<string, string> = {
  'POST /api/v3/services': 'create service',
  'GET /api/v3/services/{name}': 'read service',
  'GET /api/v3/agent/config/changes': 'agent poll',
};

/** What each kind of operation cost, per operation. */
export interface OperationCalls {
  count: number;
  /** DynamoDB and SQS calls (mean and max). */
  mean: number;
  max: number;
  /** The longest chain of those calls made one after another: round trips a caller waits for. */
  sequentialMean: number;
  sequentialMax: number;
  readUnitsMean: number;
}

/** DynamoDB and SQS calls made inside each kind of operation, and how many of them were in sequence. */
export function callsPerOperation(usage: Usage): Record<string, OperationCalls> {
  const round2 = (value: number) => Math.round(value * 100) / 100;
  return Object.fromEntries(
    Object.entries(usage.operations).map(([kind, entry]) => [
      OPERATION_NAMES[kind] ?? kind,
      {
        count: entry.count,
        mean: round2(entry.calls / entry.count),
        max: entry.maxCalls,
        sequentialMean: round2(entry.sequentialCalls / entry.count),
        sequentialMax: entry.maxSequentialCalls,
        readUnitsMean: round2(entry.readUnits / entry.count),
      },
    ]),
  );
}

/**
 * Calls per fog reconcile counting its share of the batch reads made for its queue batch (a worker reads
 * what all of a batch's records need in one call before the first runs: operation `fog batch read`).
 */
export function fogCallsWithBatchReads(usage: Usage): { perReconcile: number; batchReads: number } {
  const fog = usage.operations['fog reconcile'];
  const batch = usage.operations['fog batch read'];
  if (!fog) return { perReconcile: 0, batchReads: batch?.calls ?? 0 };
  return {
    perReconcile: Math.round(((fog.calls + (batch?.calls ?? 0)) / fog.count) * 100) / 100,
    batchReads: batch?.calls ?? 0,
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Reads the store with its own client, so the benchmark's observation does not count in the
 * capacity fogbridge itself consumes.
 */
export class Observer {
  private readonly db: DynamoDBDocumentClient;
  constructor(
    endpoint: string,
    private readonly table: string,
  ) {
    this.db = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      }),
    );
  }

  /**
   * Every live service's name and provisioning status: the same index query as `services()`, reading
   * back only those two attributes, so a watch every half second costs the store little.
   */
  serviceStatuses(): Promise<{ name: string; provisioningStatus: string }[]> {
    return this.liveServices({
      ProjectionExpression: '#name, provisioningStatus, deleted',
      ExpressionAttributeNames: { '#name': 'name' },
    });
  }

  services(): Promise<
    {
      name: string;
      provisioningStatus: string;
      bridgePort: number | null;
      targetPort: number;
      tags: string[];
    }[]
  > {
    return this.liveServices({});
  }

  /** The service rows of the services index, every page, without tombstones. */
  private async liveServices<T>(projection: {
    ProjectionExpression?: string;
    ExpressionAttributeNames?: Record<string, string>;
  }): Promise<T[]> {
    const items: Record<string, unknown>[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: 'GSI1',
          KeyConditionExpression: 'GSI1PK = :pk',
          ExpressionAttributeValues: { ':pk': 'SVC' },
          ...projection,
          ExclusiveStartKey: start,
        }),
      );
      items.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start);
    return items.filter((item) => !item.deleted) as T[];
  }

  /**
   * Many agents' `microserviceConfig` change stamps at once (BatchGetItem, 100 keys a call): a stamp above
   * the one seen before a change means the agent has been told, and its next poll pulls the config that
   * holds the change (the config is composed when it is read). `toldAt` is when the flag was raised, by
   * the time the runtime wrote on it (same machine, same clock).
   */
  async changeStamps(agentUuids: readonly string[]): Promise<Map<string, { stamp: number; toldAt: number }>> {
    // An agent's change flags are kept on its router's request record.
    const items = await this.batchRead(
      'ROUTERREQ#',
      'REQ',
      agentUuids,
      'PK, seq_microserviceConfig, updatedAt',
      false,
    );
    return new Map(
      [...items].map(([uuid, item]) => [
        uuid,
        { stamp: Number(item.seq_microserviceConfig ?? 0), toldAt: Date.parse(String(item.updatedAt ?? 0)) },
      ]),
    );
  }

  /**
   * The items `<prefix><id>` / `sk` of many ids (BatchGetItem, 100 keys a call, four calls at a time,
   * following unprocessed keys), by id; absent items are missing from the map.
   */
  private async batchRead(
    prefix: string,
    sk: string,
    ids: readonly string[],
    projection: string,
    consistent: boolean,
  ): Promise<Map<string, Record<string, unknown>>> {
    const found = new Map<string, Record<string, unknown>>();
    const chunks: (readonly string[])[] = [];
    for (let i = 0; i < ids.length; i += 100) chunks.push(ids.slice(i, i + 100));
    // Four calls in flight: a look at 10,000 routers takes a quarter of the time, still few calls.
    await mapWithConcurrency(chunks, 4, async (chunk) => {
      let request: Record<string, unknown> | undefined = {
        [this.table]: {
          Keys: chunk.map((id) => ({ PK: `${prefix}${id}`, SK: sk })),
          ProjectionExpression: projection,
          ConsistentRead: consistent,
        },
      };
      while (request && Object.keys(request).length > 0) {
        const page = await this.db.send(new BatchGetCommand({ RequestItems: request as never }));
        for (const item of page.Responses?.[this.table] ?? [])
          found.set(String(item.PK).slice(prefix.length), item);
        request = page.UnprocessedKeys as Record<string, unknown> | undefined;
      }
    });
    return found;
  }

  /** The largest item the table holds (bytes of its attribute names and values, as DynamoDB counts them, roughly). */
  async largestItem(): Promise<{ bytes: number; key: string; items: number }> {
    let largest = { bytes: 0, key: '', items: 0 };
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(new ScanCommand({ TableName: this.table, ExclusiveStartKey: start }));
      for (const item of page.Items ?? []) {
        largest.items += 1;
        const bytes = itemBytes(item);
        if (bytes > largest.bytes) largest = { ...largest, bytes, key: `${item.PK} / ${item.SK}` };
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return largest;
  }

  /** A router's stored listener entries (its partition's `ENTRY#tcpListeners#` items), by name. */
  async storedListeners(routerKey: string): Promise<Record<string, { port: string }>> {
    const found: Record<string, { port: string }> = {};
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
          ExpressionAttributeValues: { ':pk': `ROUTERCFG#${routerKey}`, ':prefix': 'ENTRY#tcpListeners#' },
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) found[item.entry.name] = item.entry;
      start = page.LastEvaluatedKey;
    } while (start);
    return found;
  }

  /** The router key of the hub document (the default router's agent, or the standalone router). */
  async hubRouterKey(): Promise<string | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: { PK: 'DEFAULTROUTER', SK: 'ROUTER' },
        ConsistentRead: true,
      }),
    );
    if (!Item) return undefined;
    return (Item.agentUuid as string | null) ?? 'default-router';
  }

  /** Many routers' request counters at once (BatchGetItem, 100 keys a call, four calls at a time). */
  async routerRequests(
    routerKeys: readonly string[],
  ): Promise<Map<string, { requested: number; completed: number }>> {
    const items = await this.batchRead('ROUTERREQ#', 'REQ', routerKeys, 'PK, requested, completed', true);
    return new Map(
      [...items].map(([key, item]) => [
        key,
        { requested: Number(item.requested ?? 0), completed: Number(item.completed ?? 0) },
      ]),
    );
  }
}

/**
 * The service every scenario creates in bulk: external, one `fleet` token; on Kubernetes it also gets a
 * Kubernetes Service in front of the hub.
 */
export function externalServiceBody(name: string, controlPlane: 'remote' | 'kubernetes' = 'remote') {
  return {
    name,
    type: 'external',
    resource: `${name}.backend.example.com`,
    targetPort: 443,
    tags: ['fleet'],
    ...(controlPlane === 'kubernetes' ? { servicePort: 443, k8sType: 'ClusterIP' } : {}),
  };
}

/**
 * `count` agents tagged `all`, created by `clients` at once, on hosts 10.<subnet>.x.y. Their NATS
 * processes (two more certificates each) would only lengthen the set-up of a bridge scenario: off.
 */
export function createAgentsTaggedAll(
  api: ApiClient,
  settings: { count: number; clients: number; prefix: string; subnet: number },
): Promise<string[]> {
  const indexes = Array.from({ length: settings.count }, (_, i) => i);
  return withClients(indexes, settings.clients, (i) =>
    createAgent(api, {
      name: `${settings.prefix}-agent-${i}`,
      host: `10.${settings.subnet}.${Math.floor(i / 250)}.${i % 250}`,
      tags: ['service.iofog.org/tag: all'],
      natsMode: 'none',
    }),
  );
}

export async function createAgent(api: ApiClient, body: Record<string, unknown>): Promise<string> {
  const response = await api.post<{ uuid: string }>('/api/v3/iofog', body);
  if (response.status !== 201) throw new Error(`agent create: ${response.status} ${response.text}`);
  return response.body.uuid;
}

/**
 * An item's size as DynamoDB counts it, close enough for a report: attribute names plus values (strings
 * in UTF-8, numbers as their digits, nested maps and lists by their parts, plus a few bytes each).
 */
function itemBytes(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (typeof value === 'number') return String(value).length;
  if (typeof value === 'boolean' || value === null) return 1;
  if (value instanceof Set) return [...value].reduce((sum, member) => sum + itemBytes(member), 0);
  if (Array.isArray(value)) return value.reduce((sum, member) => sum + 1 + itemBytes(member), 3);
  if (typeof value === 'object' && value)
    return Object.entries(value).reduce(
      (sum, [name, member]) => sum + Buffer.byteLength(name) + 1 + itemBytes(member),
      3,
    );
  return 0;
}
