import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { eventually } from './client.js';
import type { TestRuntime } from './runtime.js';
import type { ScriptedAgent } from './scripted-agent.js';

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

/**
 * Until nothing is queued for these agents and none has a change left to fetch: each polls (and
 * acknowledges) as Edgelet's changes worker does, after every reconcile asked of them has run.
 */
export async function agentsSettled(runtime: TestRuntime, agents: readonly ScriptedAgent[]): Promise<void> {
  await eventually(async () => {
    await routersQuiescent(
      runtime,
      agents.map((agent) => agent.uuid),
    );
    for (const agent of agents) await agent.poll();
    const changes = await Promise.all(agents.map((agent) => agent.changes()));
    return changes.some((change) => Object.values(change.flags).some(Boolean)) ? undefined : true;
  }, 'every agent to have fetched every change');
}
