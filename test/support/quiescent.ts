import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { eventually } from './client.js';
import type { TestRuntime } from './runtime.js';

/**
 * Until every reconcile asked of these routers has run: their request counters, read in the runtime's
 * table (`requested` no longer ahead of `completed`).
 */
export async function routersQuiescent(runtime: TestRuntime, routerKeys: string[]): Promise<void> {
  const table = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: runtime.runtime.dynamodbEndpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    }),
  );
  try {
    await eventually(async () => {
      for (const key of routerKeys) {
        const { Item } = await table.send(
          new GetCommand({
            TableName: 'fogbridge',
            Key: { PK: `ROUTERREQ#${key}`, SK: 'REQ' },
            ConsistentRead: true,
          }),
        );
        if (Number(Item?.requested ?? 0) > Number(Item?.completed ?? 0)) return undefined;
      }
      return true;
    }, 'every queued router reconcile to have run');
  } finally {
    table.destroy();
  }
}
