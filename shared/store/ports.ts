import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { PortRange } from '../domain/bridge-ports.js';
import { ConflictError, ContentionError } from '../errors.js';
import { CONFLICT, retryOnConflict } from '../retry.js';
import { conditionalWrite, documentClient, keys, tableName } from './client.js';
import { queryPage, queryPartition } from './query.js';

export interface PortClaim {
  port: number;
  owner: string;
  claimedAt: string;
}

/**
 * Bridge ports. Each claim is its own item (`PORT#<n>`, conditional put: two owners can never hold
 * one port). Which port to try comes from an allocator item per range: a counter of the highest port
 * ever handed out plus the set of released ports below it. The lowest released port goes first, else
 * the next one from the counter: exactly the first free port, found in O(1) however many claimers
 * race, where scanning the claims would make N concurrent creates cost N² attempts.
 */
const allocatorKey = (range: PortRange) => ({ PK: `PORTALLOC#${range.from}-${range.to}`, SK: 'ALLOC' });
const ownerKey = (owner: string) => ({ PK: `PORTOWNER#${owner}`, SK: 'PORT' });

export async function listPortClaims(): Promise<PortClaim[]> {
  const items = await queryPartition<PortClaim>('PORTS');
  return items.map(({ port, owner, claimedAt }) => ({ port, owner, claimedAt }));
}

/** Up to `limit` claims in port order after `cursor`, and where the next page starts (none at the end). */
export async function listPortClaimPage(
  cursor: Record<string, unknown> | undefined,
  limit: number,
): Promise<{ claims: PortClaim[]; next: Record<string, unknown> | undefined }> {
  const { items, next } = await queryPage<PortClaim>(
    {
      KeyConditionExpression: 'PK = :pk',
      ExpressionAttributeValues: { ':pk': 'PORTS' },
      ConsistentRead: true,
    },
    cursor,
    limit,
  );
  return { claims: items.map(({ port, owner, claimedAt }) => ({ port, owner, claimedAt })), next };
}

async function getClaim(port: number): Promise<PortClaim | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({ TableName: tableName(), Key: keys.portClaim(port), ConsistentRead: true }),
  );
  return Item as PortClaim | undefined;
}

/** The port `owner` already holds, if any (so a retried create never takes two). */
async function heldBy(owner: string): Promise<number | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({ TableName: tableName(), Key: ownerKey(owner), ConsistentRead: true }),
  );
  if (!Item) return undefined;
  const claim = await getClaim(Number(Item.port));
  return claim?.owner === owner ? claim.port : undefined;
}

/** The next candidate: the lowest released port, taken out of the set, else a fresh one from the counter. */
async function nextCandidate(range: PortRange): Promise<number | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({ TableName: tableName(), Key: allocatorKey(range), ConsistentRead: true }),
  );
  const released = [...((Item?.releasedPorts as Set<number> | undefined) ?? [])].sort((a, b) => a - b);
  for (const port of released) {
    const taken = await conditionalWrite(
      new UpdateCommand({
        TableName: tableName(),
        Key: allocatorKey(range),
        UpdateExpression: 'DELETE releasedPorts :port',
        ConditionExpression: 'contains(releasedPorts, :one)',
        ExpressionAttributeValues: { ':port': new Set([port]), ':one': port },
      }),
    );
    if (taken) return port;
  }
  const { counted } = await advanceCounter(range);
  return counted <= range.to ? counted : undefined;
}

/** Moves the allocator's counter one port on: the port it passed, and the released set as it stands. */
async function advanceCounter(range: PortRange): Promise<{ counted: number; released: number[] }> {
  const { Attributes } = await documentClient().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: allocatorKey(range),
      UpdateExpression: 'SET nextPort = if_not_exists(nextPort, :from) + :one',
      ExpressionAttributeValues: { ':from': range.from, ':one': 1 },
      ReturnValues: 'ALL_NEW',
    }),
  );
  return {
    counted: Number(Attributes?.nextPort) - 1,
    released: [...((Attributes?.releasedPorts as Set<number> | undefined) ?? [])].sort((a, b) => a - b),
  };
}

/** Claims the first free bridge port of `range` for `owner`, or returns the one it already holds. */
export async function claimBridgePort(owner: string, range: PortRange): Promise<number> {
  const held = await heldBy(owner);
  if (held !== undefined) return held;
  return claimPort(owner, range, nextCandidate, async (port) => {
    await documentClient().send(
      new PutCommand({ TableName: tableName(), Item: { ...ownerKey(owner), port } }),
    );
    return port;
  });
}

/**
 * Claims a port for a service being created: no look-up first, one allocator call (counter and released
 * set together), then the claim. No owner record: the caller's conditional put of the row that carries
 * the port records who holds it, and a caller whose row put loses hands the claim back with
 * `returnNewBridgePort` (a crash in between leaves a claim without a row, which the sweeper releases).
 */
export function claimNewBridgePort(owner: string, range: PortRange): Promise<number> {
  return claimPort(owner, range, takeCandidate, async (port) => port);
}

/** Hands back a claim `claimNewBridgePort` made for `owner` (no owner record to remove). */
export async function returnNewBridgePort(port: number, owner: string, range: PortRange): Promise<void> {
  if (await deleteClaim(port, owner)) await returnToAllocator(port, range);
}

/**
 * Takes candidates until a claim put wins (a port claimed outside the allocator, by another range
 * setting or an older claim, is skipped), then records the owner as `recordOwner` decides.
 */
function claimPort(
  owner: string,
  range: PortRange,
  take: (range: PortRange) => Promise<number | undefined>,
  recordOwner: (port: number) => Promise<number>,
): Promise<number> {
  return retryOnConflict(
    async () => {
      const port = await take(range);
      if (port === undefined) {
        throw new ConflictError(`No free bridge port left in BRIDGE_PORTS_RANGE ${range.from}-${range.to}`);
      }
      const claimed = await conditionalWrite(
        new PutCommand({
          TableName: tableName(),
          Item: { ...keys.portClaim(port), port, owner, claimedAt: new Date().toISOString() },
          ConditionExpression: 'attribute_not_exists(PK)',
        }),
      );
      return claimed ? recordOwner(port) : CONFLICT;
    },
    {
      times: 100,
      exhausted: () =>
        new ContentionError('Could not claim a bridge port: too many concurrent claims, retry'),
    },
  );
}

/**
 * The next port in one allocator call: the counter moves and the released set comes back with it. When
 * ports were released, the lowest is taken instead and the counted one joins the released set.
 */
async function takeCandidate(range: PortRange): Promise<number | undefined> {
  const { counted, released } = await advanceCounter(range);
  if (released.length === 0) return counted <= range.to ? counted : undefined;
  if (counted <= range.to) await returnToAllocator(counted, range);
  return (await nextCandidate(range)) ?? undefined;
}

/** Deletes the claim of `port` if `owner` holds it; true when it did. */
function deleteClaim(port: number, owner: string): Promise<boolean> {
  return conditionalWrite(
    new DeleteCommand({
      TableName: tableName(),
      Key: keys.portClaim(port),
      ConditionExpression: '#owner = :owner',
      ExpressionAttributeNames: { '#owner': 'owner' },
      ExpressionAttributeValues: { ':owner': owner },
    }),
  );
}

/** Releases `port` if `owner` still holds it, and hands it back to the allocator of `range`. */
export async function releaseBridgePort(port: number, owner: string, range: PortRange): Promise<void> {
  if (!(await deleteClaim(port, owner))) return;
  await documentClient().send(new DeleteCommand({ TableName: tableName(), Key: ownerKey(owner) }));
  await returnToAllocator(port, range);
}

/** Adds ports back to the allocator's released set (the sweeper also uses it for ports a crash leaked). */
export async function returnToAllocator(port: number, range: PortRange): Promise<void> {
  if (port < range.from || port > range.to) return;
  await documentClient().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: allocatorKey(range),
      UpdateExpression: 'ADD releasedPorts :port',
      ExpressionAttributeValues: { ':port': new Set([port]) },
    }),
  );
}

/**
 * Ports below the allocator's counter that nobody claims and that are not in the released set: a
 * create that crashed between taking a port and claiming it. The sweeper hands them back. Only ports
 * the counter had already passed at the previous sweep count (the counter is noted on each sweep): a
 * create that took a port a moment ago and is about to claim it is not mistaken for a crashed one.
 */
export async function leakedPorts(range: PortRange): Promise<number[]> {
  const { Item } = await documentClient().send(
    new GetCommand({ TableName: tableName(), Key: allocatorKey(range), ConsistentRead: true }),
  );
  if (!Item?.nextPort) return [];
  const settledBelow = Number(Item.sweptNextPort ?? range.from);
  await documentClient().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: allocatorKey(range),
      UpdateExpression: 'SET sweptNextPort = :seen',
      ExpressionAttributeValues: { ':seen': Number(Item.nextPort) },
    }),
  );
  if (settledBelow <= range.from) return [];
  const claimed = new Set((await listPortClaims()).map((claim) => claim.port));
  const released = (Item.releasedPorts as Set<number> | undefined) ?? new Set<number>();
  const leaked: number[] = [];
  for (let port = range.from; port < Math.min(settledBelow, range.to + 1); port++) {
    if (!claimed.has(port) && !released.has(port)) leaked.push(port);
  }
  return leaked;
}
