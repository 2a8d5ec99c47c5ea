import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { batchGetItems, documentClient, getItem, keys, tableName } from './client.js';

/**
 * How far an agent's router fabric is provisioned (certificate authorities, its certificates, its router
 * site config): `ready`, or `pending` with what it waits for. Kept apart from the agent row, which only
 * user changes write, so the fog worker never races a user's change.
 */
export interface PlatformStatusRow {
  phase: 'pending' | 'ready';
  message: string | null;
  updatedAt: string;
}

export function getPlatformStatus(agentUuid: string): Promise<PlatformStatusRow | undefined> {
  return getItem<PlatformStatusRow>(keys.platformStatus(agentUuid));
}

export async function getPlatformStatuses(
  agentUuids: readonly string[],
): Promise<Map<string, PlatformStatusRow>> {
  const found = await batchGetItems<PlatformStatusRow>(agentUuids.map((uuid) => keys.platformStatus(uuid)));
  return new Map([...found].map(([index, row]) => [agentUuids[index]!, row]));
}

export async function putPlatformStatus(agentUuid: string, row: PlatformStatusRow): Promise<void> {
  await documentClient().send(
    new PutCommand({ TableName: tableName(), Item: { ...keys.platformStatus(agentUuid), ...row } }),
  );
}

export async function deletePlatformStatus(agentUuid: string): Promise<void> {
  await documentClient().send(
    new DeleteCommand({ TableName: tableName(), Key: keys.platformStatus(agentUuid) }),
  );
}
