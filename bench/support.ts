import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { ApiClient } from '../test/support/client.js';

/** Percentile of a list of numbers (nearest rank). */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export { withClients } from '../test/support/processes.js';

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

  async services(): Promise<
    {
      name: string;
      provisioningStatus: string;
      bridgePort: number | null;
      targetPort: number;
      tags: string[];
    }[]
  > {
    const items: Record<string, unknown>[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: 'GSI1',
          KeyConditionExpression: 'GSI1PK = :pk',
          ExpressionAttributeValues: { ':pk': 'SVC' },
          ExclusiveStartKey: start,
        }),
      );
      items.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start);
    return items.filter((item) => !item.deleted) as never;
  }

  async routerConfig(
    routerKey: string,
  ): Promise<{ version: number; listeners: Record<string, { port: string }> }> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: { PK: `ROUTERCFG#${routerKey}`, SK: 'CFG' },
        ConsistentRead: true,
      }),
    );
    return {
      version: Number(Item?.version ?? 0),
      listeners: (Item?.config?.bridges?.tcpListeners ?? {}) as Record<string, { port: string }>,
    };
  }

  /**
   * Many routers' listener names at once: BatchGetItem, 100 keys a call, only the bridges read, so an
   * observer of 1,000 agents costs ten calls per look instead of a thousand.
   */
  async routerListeners(routerKeys: readonly string[]): Promise<Map<string, string[]>> {
    const found = new Map<string, string[]>();
    for (let i = 0; i < routerKeys.length; i += 100) {
      let request: Record<string, unknown> | undefined = {
        [this.table]: {
          Keys: routerKeys.slice(i, i + 100).map((key) => ({ PK: `ROUTERCFG#${key}`, SK: 'CFG' })),
          ProjectionExpression: 'routerKey, #config.bridges.tcpListeners',
          ExpressionAttributeNames: { '#config': 'config' },
        },
      };
      while (request && Object.keys(request).length > 0) {
        const page = await this.db.send(new BatchGetCommand({ RequestItems: request as never }));
        for (const item of page.Responses?.[this.table] ?? []) {
          found.set(String(item.routerKey), Object.keys(item.config?.bridges?.tcpListeners ?? {}));
        }
        request = page.UnprocessedKeys as Record<string, unknown> | undefined;
      }
    }
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

  async routerRequests(routerKey: string): Promise<{ requested: number; completed: number }> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: { PK: `ROUTERREQ#${routerKey}`, SK: 'REQ' },
        ConsistentRead: true,
      }),
    );
    return { requested: Number(Item?.requested ?? 0), completed: Number(Item?.completed ?? 0) };
  }
}

export async function createAgent(api: ApiClient, body: Record<string, unknown>): Promise<string> {
  const response = await api.post<{ uuid: string }>('/api/v3/iofog', body);
  if (response.status !== 201) throw new Error(`agent create: ${response.status} ${response.text}`);
  return response.body.uuid;
}
