import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { initialRouterConfig, type RouterConfig } from '../domain/router-config.js';
import { ReconcileError } from '../errors.js';
import { faultArmed } from '../faults.js';
import { conditionalWrite, documentClient, keys, tableName, withoutKeys } from './client.js';

export interface DefaultRouterRow {
  host: string;
  messagingPort: number;
  interRouterPort: number;
  edgeRouterPort: number;
  /** Set when the default router is an agent's router (the promoted system agent on remote). */
  agentUuid: string | null;
  updatedAt: string;
}

export interface RouterConfigRow {
  routerKey: string;
  config: RouterConfig;
  /** Grows with every config write; each write is conditioned on it. */
  version: number;
  updatedAt: string;
}

export async function getDefaultRouter(): Promise<DefaultRouterRow | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({ TableName: tableName(), Key: keys.defaultRouter(), ConsistentRead: true }),
  );
  return withoutKeys<DefaultRouterRow>(Item);
}

export async function putDefaultRouter(row: DefaultRouterRow): Promise<void> {
  await documentClient().send(
    new PutCommand({ TableName: tableName(), Item: { ...keys.defaultRouter(), ...row } }),
  );
}

/** Sets the default router only if none exists yet (first-agent promotion); true when this call set it. */
export async function putDefaultRouterIfAbsent(row: DefaultRouterRow): Promise<boolean> {
  return conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.defaultRouter(), ...row },
      ConditionExpression: 'attribute_not_exists(PK)',
    }),
  );
}

export async function getRouterConfig(routerKey: string): Promise<RouterConfigRow | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({ TableName: tableName(), Key: keys.routerConfig(routerKey), ConsistentRead: true }),
  );
  return withoutKeys<RouterConfigRow>(Item);
}

/** A router's config as its router receives it: the stored one, or its initial config. */
export async function readRouterConfig(routerKey: string, isHub: boolean): Promise<RouterConfig> {
  return (await getRouterConfig(routerKey))?.config ?? initialRouterConfig(isHub);
}

/**
 * Writes a router config if nobody wrote it since `expectedVersion` was read (0 = not yet created).
 * Returns false on a lost race; the caller recomputes from the store and tries again.
 */
export async function putRouterConfig(
  routerKey: string,
  config: RouterConfig,
  expectedVersion: number,
): Promise<boolean> {
  // Fault injection: behave as if another writer had won the race.
  if (faultArmed('store:router-config-conflict')) return false;
  refuseOversizedRouterConfig(routerKey, config);
  return conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: {
        ...keys.routerConfig(routerKey),
        routerKey,
        config,
        version: expectedVersion + 1,
        updatedAt: new Date().toISOString(),
      },
      ConditionExpression: expectedVersion === 0 ? 'attribute_not_exists(PK)' : '#v = :v',
      ...(expectedVersion === 0
        ? {}
        : {
            ExpressionAttributeNames: { '#v': 'version' },
            ExpressionAttributeValues: { ':v': expectedVersion },
          }),
    }),
  );
}

/**
 * DynamoDB stores items of at most 400 KB. A router config that would not fit is refused with its size
 * (the hub's service reconcile reports it as the service's provisioningError) instead of failing in the
 * store on every retry.
 */
export const ROUTER_CONFIG_LIMIT_BYTES = 380_000;

function refuseOversizedRouterConfig(routerKey: string, config: RouterConfig): void {
  const bytes = Buffer.byteLength(JSON.stringify(config));
  if (bytes > ROUTER_CONFIG_LIMIT_BYTES) {
    throw new ReconcileError(
      `Router ${routerKey}'s config would be ${bytes} bytes, over the ${ROUTER_CONFIG_LIMIT_BYTES} bytes fogbridge allows below DynamoDB's 400 KB item limit; nothing was written`,
    );
  }
}

export interface RouterRequestsRow {
  requested?: number;
  completed?: number;
  /** The last request that asked for the agent's fabric steps, and the last computation that ran them. */
  fabricRequested?: number;
  fabricCompleted?: number;
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
  };
}

/**
 * Records that every request up to `seq` is covered by a finished computation (and, when it ran the
 * fabric steps, every fabric request up to `seq` too).
 */
export async function markRouterRequestsCompleted(
  routerKey: string,
  seq: number,
  fabric = false,
): Promise<void> {
  const marked = await conditionalWrite(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.routerRequests(routerKey),
      UpdateExpression: fabric ? 'SET completed = :seq, fabricCompleted = :seq' : 'SET completed = :seq',
      ConditionExpression: 'attribute_not_exists(completed) OR completed < :seq',
      ExpressionAttributeValues: { ':seq': seq },
    }),
  );
  if (fabric && !marked) {
    // A computation that ran the fabric steps but whose `completed` lost to a later one still counts.
    await conditionalWrite(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.routerRequests(routerKey),
        UpdateExpression: 'SET fabricCompleted = :seq',
        ConditionExpression: 'attribute_not_exists(fabricCompleted) OR fabricCompleted < :seq',
        ExpressionAttributeValues: { ':seq': seq },
      }),
    );
  }
}

export async function deleteRouterConfig(routerKey: string): Promise<void> {
  await documentClient().send(
    new DeleteCommand({ TableName: tableName(), Key: keys.routerConfig(routerKey) }),
  );
}

export async function deleteDefaultRouter(): Promise<void> {
  await documentClient().send(new DeleteCommand({ TableName: tableName(), Key: keys.defaultRouter() }));
}

/** Where the sweeper's drift check left off in the agent list (undefined: at the start). */
export async function getDriftCursor(): Promise<Record<string, unknown> | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({ TableName: tableName(), Key: keys.driftCursor(), ConsistentRead: true }),
  );
  return Item?.after as Record<string, unknown> | undefined;
}

export async function putDriftCursor(after: Record<string, unknown> | undefined): Promise<void> {
  await documentClient().send(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.driftCursor(), ...(after ? { after } : {}), updatedAt: new Date().toISOString() },
    }),
  );
}
