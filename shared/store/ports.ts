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
 * hold the same port, and the loser simply tries the next gap.
 */
export async function claimBridgePort(owner: string, range: PortRange): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const claims = await listPortClaims();
    const held = claims.find((claim) => claim.owner === owner);
    if (held) return held.port;
    const port = firstFreePort(
      claims.map((claim) => claim.port),
      range,
    );
    if (port === undefined) {
      throw new ConflictError(`No free bridge port left in BRIDGE_PORTS_RANGE ${range.from}-${range.to}`);
    }
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
  throw new ContentionError('Could not claim a bridge port: too many concurrent claims, retry');
}

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
