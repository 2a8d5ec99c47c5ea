import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient, keys, type SweepCursor, tableName } from './client.js';

/**
 * Where one of the sweeper's rotating checks left off: in the agent list (`routers`, the drift check), in
 * the service list (`services`, the distribution-set and hub-entry checks), in the port claims (`ports`,
 * the orphan check) or in the hub's stored entries (`hub`); undefined: at the start.
 */
export async function getDriftCursor(
  check: SweepCursor = 'routers',
): Promise<Record<string, unknown> | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({ TableName: tableName(), Key: keys.driftCursor(check), ConsistentRead: true }),
  );
  return Item?.after as Record<string, unknown> | undefined;
}

export async function putDriftCursor(
  after: Record<string, unknown> | undefined,
  check: SweepCursor = 'routers',
): Promise<void> {
  await documentClient().send(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.driftCursor(check), ...(after ? { after } : {}), updatedAt: new Date().toISOString() },
    }),
  );
}
