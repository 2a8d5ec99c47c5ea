import { DeleteCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { RolloutWait } from '../domain/topology.js';
import { documentClient, keys, tableName } from './client.js';

/** Kept on the dialer's router requests item, `rollout`. */
export type { RolloutWait };

/** The links a router was last told to start with: per upstream, the host, port and role it dials. */
export type LinksTold = Record<string, { host: string; port: string; role: string }>;

/** Records the links the agent's router was told to rebuild with (on its router requests item). */
export async function putLinksTold(routerKey: string, links: LinksTold): Promise<void> {
  await documentClient().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.routerRequests(routerKey),
      UpdateExpression: 'SET linksTold = :links',
      ExpressionAttributeValues: { ':links': links },
    }),
  );
}

/** Records on the dialer's requests item what its rebuild waits for (or waited for, with `toldAt`). */
export async function putRolloutWait(dialer: string, wait: RolloutWait): Promise<void> {
  await documentClient().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.routerRequests(dialer),
      UpdateExpression: 'SET rollout = :wait',
      ExpressionAttributeValues: { ':wait': wait },
    }),
  );
}

export async function clearRolloutWait(dialer: string): Promise<void> {
  await documentClient().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.routerRequests(dialer),
      UpdateExpression: 'REMOVE rollout',
    }),
  );
}

/**
 * A hold: the dialer is to be reconciled again when `upstream` acknowledges a change (or, past the
 * bounded wait, by the sweeper).
 */
export async function putRolloutHold(upstream: string, dialer: string, since: string): Promise<void> {
  await documentClient().send(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.rolloutHold(upstream, dialer), upstream, dialer, since },
    }),
  );
}

export interface RolloutHold {
  upstream: string;
  dialer: string;
  since: string;
}

/** The holds waiting for `upstream`, or every hold. */
export async function listRolloutHolds(upstream?: string): Promise<RolloutHold[]> {
  const holds: RolloutHold[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await documentClient().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression:
          upstream === undefined ? 'PK = :pk' : 'PK = :pk AND begins_with(SK, :upstream)',
        ExpressionAttributeValues: {
          ':pk': 'ROLLOUTHOLDS',
          ...(upstream === undefined ? {} : { ':upstream': `${upstream}#` }),
        },
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? [])
      holds.push({ upstream: item.upstream, dialer: item.dialer, since: item.since } as RolloutHold);
    start = page.LastEvaluatedKey;
  } while (start);
  return holds;
}

export async function deleteRolloutHold(upstream: string, dialer: string): Promise<void> {
  await documentClient().send(
    new DeleteCommand({ TableName: tableName(), Key: keys.rolloutHold(upstream, dialer) }),
  );
}
