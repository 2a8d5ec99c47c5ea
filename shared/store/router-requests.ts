import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type ChangeStamp, changeFlagsUpdate, raiseChangeFlags } from './changes.js';
import { conditionalWrite, documentClient, isConditionalCheckFailed, keys, tableName } from './client.js';
import { type PlatformStatusRow, platformStatusUpdate, putPlatformStatus } from './platform.js';
import { type LinksTold, putLinksTold, type RolloutWait } from './rollout-holds.js';

/**
 * A router's request counters (ROUTERREQ#<router>): every fog reconcile request takes the next number,
 * and the computation that covers it marks it completed, so a request a later computation covered is
 * skipped. The same item carries the agent's change flags and platform status.
 */

export interface RouterRequestsRow {
  requested?: number;
  completed?: number;
  /** The last request that asked for the agent's fabric steps, and the last computation that ran them. */
  fabricRequested?: number;
  fabricCompleted?: number;
  /**
   * The last request that asked for a full computation of the router's entries (the sweeper's: a drift
   * repair or a re-drive), and the last computation that made one.
   */
  fullRequested?: number;
  fullCompleted?: number;
  /** What the router's last rebuild waited for, if it had to (see link-rollout.ts). */
  rollout?: RolloutWait;
  /** The links its router was last told to rebuild with. */
  linksTold?: LinksTold;
}

export async function getRouterRequests(routerKey: string): Promise<RouterRequestsRow> {
  const { Item } = await documentClient().send(
    new GetCommand({ TableName: tableName(), Key: keys.routerRequests(routerKey), ConsistentRead: true }),
  );
  return {
    requested: Item?.requested as number | undefined,
    completed: Item?.completed as number | undefined,
    fabricRequested: Item?.fabricRequested as number | undefined,
    fabricCompleted: Item?.fabricCompleted as number | undefined,
    fullRequested: Item?.fullRequested as number | undefined,
    fullCompleted: Item?.fullCompleted as number | undefined,
    ...(Item?.rollout ? { rollout: Item.rollout as RolloutWait } : {}),
    ...(Item?.linksTold ? { linksTold: Item.linksTold as LinksTold } : {}),
  };
}

/**
 * Records that every request up to `seq` is covered by a finished computation (and, when it ran the
 * fabric steps or computed the entries in full, every such request up to `seq` too), with the agent's
 * platform status when it changed and the change flags the computation owes the agent: one write.
 * Returns the stamp the flags were raised with (undefined when none were).
 */
export async function markRouterRequestsCompleted(
  routerKey: string,
  seq: number,
  ran: {
    fabric?: boolean;
    full?: boolean;
    status?: PlatformStatusRow;
    raise?: readonly ChangeStamp[];
    /** The links the agent's router runs once told (see link-rollout.ts). */
    linksTold?: LinksTold;
  } = {},
): Promise<number | undefined> {
  const also = (['fabric', 'full'] as const).filter((part) => ran[part]).map((part) => `${part}Completed`);
  const status = ran.status ? platformStatusUpdate(ran.status) : undefined;
  const flags = ran.raise && ran.raise.length > 0 ? changeFlagsUpdate(ran.raise) : undefined;
  let stamp: number | undefined;
  let marked = true;
  try {
    const { Attributes } = await documentClient().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.routerRequests(routerKey),
        UpdateExpression: `SET ${[
          ...['completed', ...also].map((name) => `${name} = :seq`),
          ...(status ? [status.set] : []),
          ...(flags ? [flags.set] : []),
          ...(ran.linksTold ? ['linksTold = :links'] : []),
        ].join(', ')}`,
        ConditionExpression: 'attribute_not_exists(completed) OR completed < :seq',
        ...(flags ? { ExpressionAttributeNames: flags.names } : {}),
        ExpressionAttributeValues: {
          ':seq': seq,
          ...status?.values,
          ...flags?.values,
          ...(ran.linksTold ? { ':links': ran.linksTold } : {}),
        },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    if (flags) stamp = Number(Attributes?.changeSeq);
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
    marked = false;
  }
  if (marked) return stamp;
  // A computation whose `completed` lost to a later one still counts for the fabric steps (or the full
  // computation) it ran, what it found is still the agent's status, and what it wrote the agent is owed.
  for (const name of also) {
    await conditionalWrite(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.routerRequests(routerKey),
        UpdateExpression: 'SET #done = :seq',
        ConditionExpression: 'attribute_not_exists(#done) OR #done < :seq',
        ExpressionAttributeNames: { '#done': name },
        ExpressionAttributeValues: { ':seq': seq },
      }),
    );
  }
  if (ran.status) await putPlatformStatus(routerKey, ran.status);
  if (flags) stamp = await raiseChangeFlags(routerKey, ran.raise!);
  if (ran.linksTold) await putLinksTold(routerKey, ran.linksTold);
  return stamp;
}
