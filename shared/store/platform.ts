import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { batchGetItems, conditionalWrite, documentClient, keys, tableName } from './client.js';

/**
 * How far an agent's router fabric is provisioned (certificate authorities, its certificates, its router
 * own part, NATS): `ready`, or `pending` with what it waits for. Kept on the router's request record,
 * which only the request counter and the fog worker write (never the agent row, which user changes write,
 * so the worker never races a user's change): the worker records it with the same write that marks its
 * requests completed.
 */
export interface PlatformStatusRow {
  phase: 'pending' | 'ready';
  message: string | null;
  updatedAt: string;
}

/** The status as the request record holds it (undefined before the agent's first reconcile finished). */
export function platformStatusOf(item: Record<string, unknown> | undefined): PlatformStatusRow | undefined {
  if (item?.platformPhase !== 'pending' && item?.platformPhase !== 'ready') return undefined;
  return {
    phase: item.platformPhase,
    message: (item.platformMessage as string | null | undefined) ?? null,
    updatedAt: String(item.platformUpdatedAt ?? ''),
  };
}

/** The update that sets `row` on the request record, to join another SET. */
export function platformStatusUpdate(row: PlatformStatusRow): {
  set: string;
  values: Record<string, unknown>;
} {
  return {
    set: 'platformPhase = :platformPhase, platformMessage = :platformMessage, platformUpdatedAt = :platformUpdatedAt',
    values: {
      ':platformPhase': row.phase,
      ':platformMessage': row.message,
      ':platformUpdatedAt': row.updatedAt,
    },
  };
}

/**
 * The request records of many agents (batched reads): what their platform status and their change
 * state are read from.
 */
export async function getRequestRecords(
  agentUuids: readonly string[],
): Promise<Map<string, Record<string, unknown>>> {
  const found = await batchGetItems<Record<string, unknown>>(
    agentUuids.map((uuid) => keys.routerRequests(uuid)),
  );
  return new Map([...found].map(([index, item]) => [agentUuids[index]!, item]));
}

export async function getPlatformStatuses(
  agentUuids: readonly string[],
): Promise<Map<string, PlatformStatusRow>> {
  const records = await getRequestRecords(agentUuids);
  return new Map(
    [...records].flatMap(([uuid, item]) => {
      const row = platformStatusOf(item);
      return row ? [[uuid, row] as const] : [];
    }),
  );
}

export async function putPlatformStatus(agentUuid: string, row: PlatformStatusRow): Promise<void> {
  const update = platformStatusUpdate(row);
  await documentClient().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.routerRequests(agentUuid),
      UpdateExpression: `SET ${update.set}`,
      ExpressionAttributeValues: update.values,
    }),
  );
}

/** Forgets the status; the request counters stay (a later request must not reuse a number). */
export async function deletePlatformStatus(agentUuid: string): Promise<void> {
  await conditionalWrite(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.routerRequests(agentUuid),
      UpdateExpression: 'REMOVE platformPhase, platformMessage, platformUpdatedAt',
      ConditionExpression: 'attribute_exists(PK)',
    }),
  );
}
