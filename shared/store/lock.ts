import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { conditionalWrite, documentClient, isConditionalCheckFailed, keys, tableName } from './client.js';

export interface Lease {
  name: string;
  owner: string;
  /** Grows with every acquisition; a holder whose lease lapsed can tell it was superseded. */
  fencingToken: number;
  expiresAt: number;
}

/**
 * Takes the named lock with a conditional UpdateItem: free, or held by a lease that expired.
 * Returns undefined when someone else holds it.
 */
export async function tryAcquireLock(
  name: string,
  owner: string,
  leaseMs: number,
): Promise<Lease | undefined> {
  const now = Date.now();
  try {
    const { Attributes } = await documentClient().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.lock(name),
        UpdateExpression: 'SET #owner = :owner, expiresAt = :expires ADD fencingToken :one',
        ConditionExpression: 'attribute_not_exists(#owner) OR expiresAt < :now',
        ExpressionAttributeNames: { '#owner': 'owner' },
        ExpressionAttributeValues: { ':owner': owner, ':expires': now + leaseMs, ':now': now, ':one': 1 },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return { name, owner, fencingToken: Number(Attributes?.fencingToken), expiresAt: now + leaseMs };
  } catch (error) {
    if (isConditionalCheckFailed(error)) return undefined;
    throw error;
  }
}

/** Releases the lock if this lease still holds it (a lapsed lease releases nothing). */
export async function releaseLock(lease: Lease): Promise<void> {
  await conditionalWrite(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.lock(lease.name),
      UpdateExpression: 'REMOVE #owner, expiresAt',
      ConditionExpression: '#owner = :owner AND fencingToken = :token',
      ExpressionAttributeNames: { '#owner': 'owner' },
      ExpressionAttributeValues: { ':owner': lease.owner, ':token': lease.fencingToken },
    }),
  );
}

/** Runs `work` under the lock, waiting for it up to `waitMs`. */
export async function withLock<T>(
  name: string,
  owner: string,
  options: { leaseMs: number; waitMs: number },
  work: (lease: Lease) => Promise<T>,
): Promise<T | undefined> {
  const deadline = Date.now() + options.waitMs;
  let delay = 20;
  for (;;) {
    const lease = await tryAcquireLock(name, owner, options.leaseMs);
    if (lease) {
      try {
        return await work(lease);
      } finally {
        await releaseLock(lease);
      }
    }
    if (Date.now() > deadline) return undefined;
    await new Promise((resolve) => setTimeout(resolve, delay + Math.random() * delay));
    delay = Math.min(delay * 2, 200);
  }
}
