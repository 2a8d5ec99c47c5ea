import { DeleteCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { RouterMode } from '../domain/router-objects.js';
import { ConflictError } from '../errors.js';
import { conditionalWrite, documentClient, indexes, keys, tableName, withoutKeys } from './client.js';
import { queryIndex, queryPartition } from './query.js';

export interface AgentRow {
  uuid: string;
  name: string;
  host: string | null;
  tags: string[];
  routerMode: RouterMode;
  messagingPort: number | null;
  interRouterPort: number | null;
  edgeRouterPort: number | null;
  /** Agent uuids, or `default-router`. */
  upstreamRouters: string[];
  isSystem: boolean;
  natsMode: string;
  /** The architecture it was declared with (potctl's `fogType`; 0 = the agent reports it). */
  fogTypeId?: number;
  generation: number;
  observedGeneration: number;
  createdAt: string;
  updatedAt: string;
}

function indexAttributes(row: AgentRow) {
  const pending = row.generation > row.observedGeneration;
  return {
    GSI1PK: 'AGENT',
    GSI1SK: row.name,
    GSI4PK: pending ? 'PENDING' : undefined,
    GSI4SK: pending ? `AGENT#${row.uuid}` : undefined,
  };
}

export async function getAgentRow(uuid: string): Promise<AgentRow | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({ TableName: tableName(), Key: keys.agent(uuid), ConsistentRead: true }),
  );
  return withoutKeys<AgentRow>(Item);
}

export async function getAgentUuidByName(name: string): Promise<string | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({ TableName: tableName(), Key: keys.agentName(name), ConsistentRead: true }),
  );
  return Item?.uuid as string | undefined;
}

export async function listAgentRows(): Promise<AgentRow[]> {
  const items = await queryIndex<Record<string, unknown>>(indexes.byKind, 'AGENT');
  return items.map((item) => withoutKeys<AgentRow>(item)!);
}

/** A position in the agent list, as the store hands it back; opaque to callers. */
export type AgentListCursor = Record<string, unknown>;

/**
 * One page of agent uuids in list order, starting after `cursor`; `next` is where the following page
 * starts, undefined after the last one.
 */
export async function listAgentUuidPage(
  cursor: AgentListCursor | undefined,
  limit: number,
): Promise<{ uuids: string[]; next: AgentListCursor | undefined }> {
  const page = await documentClient().send(
    new QueryCommand({
      TableName: tableName(),
      IndexName: indexes.byKind,
      KeyConditionExpression: 'GSI1PK = :kind',
      ExpressionAttributeValues: { ':kind': 'AGENT' },
      ProjectionExpression: '#uuid',
      ExpressionAttributeNames: { '#uuid': 'uuid' },
      Limit: limit,
      ExclusiveStartKey: cursor,
    }),
  );
  return { uuids: (page.Items ?? []).map((item) => String(item.uuid)), next: page.LastEvaluatedKey };
}

async function claimAgentName(name: string, uuid: string): Promise<void> {
  const claimed = await conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.agentName(name), uuid },
      ConditionExpression: 'attribute_not_exists(PK) OR #uuid = :uuid',
      ExpressionAttributeNames: { '#uuid': 'uuid' },
      ExpressionAttributeValues: { ':uuid': uuid },
    }),
  );
  if (!claimed) throw new ConflictError(`Agent with name ${name} already exists`);
}

async function releaseAgentName(name: string, uuid: string): Promise<void> {
  await conditionalWrite(
    new DeleteCommand({
      TableName: tableName(),
      Key: keys.agentName(name),
      ConditionExpression: '#uuid = :uuid',
      ExpressionAttributeNames: { '#uuid': 'uuid' },
      ExpressionAttributeValues: { ':uuid': uuid },
    }),
  );
}

/** Name first (uniqueness), then the row; a failed row write gives the name back. */
export async function putNewAgentRow(row: AgentRow): Promise<void> {
  await claimAgentName(row.name, row.uuid);
  const written = await conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.agent(row.uuid), ...row, ...indexAttributes(row) },
      ConditionExpression: 'attribute_not_exists(PK)',
    }),
  ).catch(async (error: unknown) => {
    await releaseAgentName(row.name, row.uuid);
    throw error;
  });
  if (!written) {
    await releaseAgentName(row.name, row.uuid);
    throw new ConflictError(`Agent with uuid ${row.uuid} already exists`);
  }
}

/** Replaces the row written at `expectedGeneration`; false when another writer got there first. */
export async function replaceAgentRow(next: AgentRow, previous: AgentRow): Promise<boolean> {
  const renamed = next.name !== previous.name;
  if (renamed) await claimAgentName(next.name, next.uuid);
  const written = await conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.agent(next.uuid), ...next, ...indexAttributes(next) },
      ConditionExpression: '#g = :g',
      ExpressionAttributeNames: { '#g': 'generation' },
      ExpressionAttributeValues: { ':g': previous.generation },
    }),
  ).catch(async (error: unknown) => {
    if (renamed) await releaseAgentName(next.name, next.uuid);
    throw error;
  });
  // The name the row does not carry is given back: the new one on a lost race, else the old one.
  if (renamed) await releaseAgentName(written ? previous.name : next.name, next.uuid);
  return written;
}

export async function deleteAgentRow(row: AgentRow): Promise<boolean> {
  const deleted = await conditionalWrite(
    new DeleteCommand({
      TableName: tableName(),
      Key: keys.agent(row.uuid),
      ConditionExpression: '#g = :g',
      ExpressionAttributeNames: { '#g': 'generation' },
      ExpressionAttributeValues: { ':g': row.generation },
    }),
  );
  if (deleted) await releaseAgentName(row.name, row.uuid);
  return deleted;
}

export async function listAgentUuidsByToken(token: string): Promise<string[]> {
  const items = await queryPartition<{ uuid: string }>(`AGTOKEN#${token}`);
  return items.map((item) => item.uuid);
}

export async function setAgentTokens(uuid: string, add: string[], remove: string[]): Promise<void> {
  const client = documentClient();
  await Promise.all([
    ...add.map((token) =>
      client.send(
        new PutCommand({ TableName: tableName(), Item: { ...keys.agentToken(token, uuid), uuid, token } }),
      ),
    ),
    ...remove.map((token) =>
      client.send(new DeleteCommand({ TableName: tableName(), Key: keys.agentToken(token, uuid) })),
    ),
  ]);
}

export async function listPendingAgentUuids(): Promise<string[]> {
  const items = await queryIndex<Record<string, unknown>>(indexes.pending, 'PENDING');
  return items.filter((item) => String(item.GSI4SK).startsWith('AGENT#')).map((item) => String(item.uuid));
}

/**
 * The system-agent claim: on a remote control plane exactly one agent, the first, is promoted. The
 * conditional put makes two concurrent "first" creates agree on one winner.
 */
export async function claimSystemAgent(uuid: string): Promise<boolean> {
  return conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: { PK: 'SYSTEMAGENT', SK: 'AGENT', uuid },
      ConditionExpression: 'attribute_not_exists(PK) OR #uuid = :uuid',
      ExpressionAttributeNames: { '#uuid': 'uuid' },
      ExpressionAttributeValues: { ':uuid': uuid },
    }),
  );
}

export async function releaseSystemAgent(uuid: string): Promise<void> {
  await conditionalWrite(
    new DeleteCommand({
      TableName: tableName(),
      Key: { PK: 'SYSTEMAGENT', SK: 'AGENT' },
      ConditionExpression: '#uuid = :uuid',
      ExpressionAttributeNames: { '#uuid': 'uuid' },
      ExpressionAttributeValues: { ':uuid': uuid },
    }),
  );
}
