import { QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { documentClient, tableName } from './client.js';

/** Every item of a Query, following pagination. */
export async function queryAll<T>(input: Omit<QueryCommandInput, 'TableName'>): Promise<T[]> {
  const items: T[] = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await documentClient().send(
      new QueryCommand({ TableName: tableName(), ...input, ExclusiveStartKey }),
    );
    items.push(...((page.Items ?? []) as T[]));
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return items;
}

/**
 * One page of a Query: up to `limit` items after `cursor`, and where the next page starts (none after
 * the last). The sweeper's rotating checks walk a list this way, a window per sweep.
 */
export async function queryPage<T>(
  input: Omit<QueryCommandInput, 'TableName' | 'Limit' | 'ExclusiveStartKey'>,
  cursor: Record<string, unknown> | undefined,
  limit: number,
): Promise<{ items: T[]; next: Record<string, unknown> | undefined }> {
  const page = await documentClient().send(
    new QueryCommand({ TableName: tableName(), ...input, Limit: limit, ExclusiveStartKey: cursor }),
  );
  return { items: (page.Items ?? []) as T[], next: page.LastEvaluatedKey };
}

export function queryIndex<T>(index: string, partition: string, consistent = false): Promise<T[]> {
  const n = index.replace('GSI', '');
  return queryAll<T>({
    IndexName: index,
    KeyConditionExpression: '#pk = :pk',
    ExpressionAttributeNames: { '#pk': `GSI${n}PK` },
    ExpressionAttributeValues: { ':pk': partition },
    ...(consistent ? { ConsistentRead: true } : {}),
  });
}

/** Items of an index partition whose sort key starts with `prefix`. */
export function queryIndexPrefix<T>(index: string, partition: string, prefix: string): Promise<T[]> {
  const n = index.replace('GSI', '');
  return queryAll<T>({
    IndexName: index,
    KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :prefix)',
    ExpressionAttributeNames: { '#pk': `GSI${n}PK`, '#sk': `GSI${n}SK` },
    ExpressionAttributeValues: { ':pk': partition, ':prefix': prefix },
  });
}

export function queryPartition<T>(pk: string): Promise<T[]> {
  return queryAll<T>({
    KeyConditionExpression: 'PK = :pk',
    ExpressionAttributeValues: { ':pk': pk },
    ConsistentRead: true,
  });
}
