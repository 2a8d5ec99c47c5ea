import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
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
