import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { firstFreePort, type PortRange } from '../domain/bridge-ports.js';
import { ConflictError, ContentionError } from '../errors.js';
import { documentClient, isConditionalCheckFailed, keys, tableName } from './client.js';
import { queryPartition } from './query.js';

export interface PortClaim {
  port: number;
  owner: string;
  claimedAt: string;
}

export async function listPortClaims(): Promise<PortClaim[]> {
  const items = await queryPartition<PortClaim>('PORTS');
  return items.map(({ port, owner, claimedAt }) => ({ port, owner, claimedAt }));
}

/**
 * Claims the first free bridge port for `owner`, or returns the one it already holds (so a retried
 * create never takes two). Each claim is a conditional put on its own item: two callers can never
 * hold the same port. A caller that loses a port to a concurrent claim tries the next free one from
 * the same read instead of reading every claim again, so a burst of creates spreads over successive
 * ports rather than all queueing for the lowest.
 */
export async function claimBridgePort(owner: string, range: PortRange): Promise<number> {
  for (let round = 0; round < 20; round++) {
    const claims = await listPortClaims();
    const held = claims.find((claim) => claim.owner === owner);
    if (held) return held.port;
    const taken = new Set(claims.map((claim) => claim.port));
    if (firstFreePort(taken, range) === undefined) {
      throw new ConflictError(`No free bridge port left in BRIDGE_PORTS_RANGE ${range.from}-${range.to}`);
    }
    let tried = 0;
    for (let port = range.from; port <= range.to && tried < CANDIDATES_PER_READ; port++) {
      if (taken.has(port)) continue;
      tried++;
      try {
        await documentClient().send(
          new PutCommand({
            TableName: tableName(),
            Item: { ...keys.portClaim(port), port, owner, claimedAt: new Date().toISOString() },
            ConditionExpression: 'attribute_not_exists(PK)',
          }),
        );
        return port;
      } catch (error) {
        if (!isConditionalCheckFailed(error)) throw error;
      }
    }
  }
  throw new ContentionError('Could not claim a bridge port: too many concurrent claims, retry');
}

/** Free ports tried, lowest first, before the claims are read again. */
const CANDIDATES_PER_READ = 64;

/** Releases `port` if `owner` still holds it. */
export async function releaseBridgePort(port: number, owner: string): Promise<void> {
  try {
    await documentClient().send(
      new DeleteCommand({
        TableName: tableName(),
        Key: keys.portClaim(port),
        ConditionExpression: '#owner = :owner',
        ExpressionAttributeNames: { '#owner': 'owner' },
        ExpressionAttributeValues: { ':owner': owner },
      }),
    );
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
  }
}
