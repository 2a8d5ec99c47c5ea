import { DeleteCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { NatsMode } from '../domain/agent-schema.js';
import type { NatsPorts } from '../domain/nats-conf.js';
import type { RouterMode } from '../domain/router-objects.js';
import { agentCertificateToken } from '../domain/router-site.js';
import { ConflictError } from '../errors.js';
import {
  batchGetItems,
  batchWriteItems,
  conditionalWrite,
  documentClient,
  indexes,
  keys,
  tableName,
  withoutKeys,
} from './client.js';
import { queryIndex, queryPage, queryPartition } from './query.js';
import { unchangedReferences } from './references.js';

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
  natsMode: NatsMode;
  /** NATS ports (defaults when absent: 4222, 6222, 7422, 8883, 8222). */
  natsPorts?: NatsPorts;
  jsStorageSize?: string;
  jsMemoryStoreSize?: string;
  /** Agent uuids of NATS servers, or `default-nats-hub`, a leaf links to. */
  upstreamNatsServers?: string[];
  /** The architecture it was declared with (potctl's `fogType`; 0 = the agent reports it). */
  fogTypeId?: number;
  generation: number;
  observedGeneration: number;
  /** Changed by every new reference to the agent (see store/references.ts); removals condition on it. */
  refToken?: string;
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

/** Many agent rows by uuid (batched reads); missing ones are absent. */
export async function getAgentRows(uuids: readonly string[]): Promise<Map<string, AgentRow>> {
  const found = await batchGetItems<AgentRow>(uuids.map((uuid) => keys.agent(uuid)));
  return new Map([...found].map(([index, row]) => [uuids[index]!, row]));
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

/** Whether any agent exists: one item of the agent list at most, however many agents there are. */
export async function hasAnyAgent(): Promise<boolean> {
  const { Items } = await documentClient().send(
    new QueryCommand({
      TableName: tableName(),
      IndexName: indexes.byKind,
      KeyConditionExpression: 'GSI1PK = :kind',
      ExpressionAttributeValues: { ':kind': 'AGENT' },
      ProjectionExpression: 'PK',
      Limit: 1,
    }),
  );
  return (Items?.length ?? 0) > 0;
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
  const { items, next } = await queryPage<{ uuid: string }>(
    {
      IndexName: indexes.byKind,
      KeyConditionExpression: 'GSI1PK = :kind',
      ExpressionAttributeValues: { ':kind': 'AGENT' },
      ProjectionExpression: '#uuid',
      ExpressionAttributeNames: { '#uuid': 'uuid' },
    },
    cursor,
    limit,
  );
  return { uuids: items.map((item) => String(item.uuid)), next };
}

type ClaimKey = { PK: string; SK: string };

/** A uniqueness claim held by one agent: taken once, idempotent for its holder. */
async function claim(key: ClaimKey, uuid: string, conflict: string): Promise<void> {
  const claimed = await conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: { ...key, uuid },
      ConditionExpression: 'attribute_not_exists(PK) OR #uuid = :uuid',
      ExpressionAttributeNames: { '#uuid': 'uuid' },
      ExpressionAttributeValues: { ':uuid': uuid },
    }),
  );
  if (!claimed) throw new ConflictError(conflict);
}

async function release(key: ClaimKey, uuid: string): Promise<void> {
  await conditionalWrite(
    new DeleteCommand({
      TableName: tableName(),
      Key: key,
      ConditionExpression: '#uuid = :uuid',
      ExpressionAttributeNames: { '#uuid': 'uuid' },
      ExpressionAttributeValues: { ':uuid': uuid },
    }),
  );
}

const claimAgentName = (name: string, uuid: string) =>
  claim(keys.agentName(name), uuid, `Agent with name ${name} already exists`);
const releaseAgentName = (name: string, uuid: string) => release(keys.agentName(name), uuid);

/**
 * The agent's certificates are named after a DNS-label form of its name; two names that fold to the
 * same label ("Edge 1", "edge-1") would share certificates, so the folded name is claimed as well.
 */
async function claimNames(row: AgentRow): Promise<void> {
  await claimAgentName(row.name, row.uuid);
  const token = agentCertificateToken(row.name);
  try {
    await claim(
      keys.agentCertificateName(token),
      row.uuid,
      `Agent name ${row.name} names its certificates ${token}, as another agent's name does; choose another name`,
    );
  } catch (error) {
    await releaseAgentName(row.name, row.uuid);
    throw error;
  }
}

async function releaseNames(row: AgentRow): Promise<void> {
  await releaseAgentName(row.name, row.uuid);
  await release(keys.agentCertificateName(agentCertificateToken(row.name)), row.uuid);
}

/** Names first (uniqueness), then the row; a failed row write gives the names back. */
export async function putNewAgentRow(row: AgentRow): Promise<void> {
  await claimNames(row);
  const written = await conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.agent(row.uuid), ...row, ...indexAttributes(row) },
      ConditionExpression: 'attribute_not_exists(PK)',
    }),
  ).catch(async (error: unknown) => {
    await releaseNames(row);
    throw error;
  });
  if (!written) {
    await releaseNames(row);
    throw new ConflictError(`Agent with uuid ${row.uuid} already exists`);
  }
}

/**
 * Replaces the row written at `expectedGeneration`; false when another writer got there first. Names
 * are immutable (they name the agent's certificates), so the row keeps its claims.
 */
export async function replaceAgentRow(next: AgentRow, previous: AgentRow): Promise<boolean> {
  if (next.name !== previous.name) throw new Error(`Agent ${previous.uuid}: a name cannot change`);
  return conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.agent(next.uuid), ...next, ...indexAttributes(next) },
      ...asRead(previous),
    }),
  );
}

/** The condition of a write over a row as it was read: same generation, no reference made since. */
function asRead(previous: AgentRow) {
  const references = unchangedReferences(previous.refToken);
  return {
    ConditionExpression: `#g = :g AND ${references.expression}`,
    ExpressionAttributeNames: { '#g': 'generation' },
    ExpressionAttributeValues: { ':g': previous.generation, ...references.values },
  };
}

export async function deleteAgentRow(row: AgentRow): Promise<boolean> {
  const deleted = await conditionalWrite(
    new DeleteCommand({ TableName: tableName(), Key: keys.agent(row.uuid), ...asRead(row) }),
  );
  if (deleted) await releaseNames(row);
  return deleted;
}

export async function listAgentUuidsByToken(token: string): Promise<string[]> {
  const items = await queryPartition<{ uuid: string }>(`AGTOKEN#${token}`);
  return items.map((item) => item.uuid);
}

/**
 * Writes the agent's index entries for `add` that are missing (read in one batch, which a fog
 * reconcile's read snapshot answers) and deletes those for `remove`.
 */
export async function setAgentTokens(uuid: string, add: string[], remove: string[]): Promise<void> {
  const writes = await agentTokenWrites(uuid, add, remove);
  await batchWriteItems(writes.puts, writes.deletes);
}

/**
 * The writes that give an agent the token-index entries `add` (those missing; one batch read) and take
 * away `remove`, for the caller to make with other items in one batch write.
 */
export async function agentTokenWrites(
  uuid: string,
  add: readonly string[],
  remove: readonly string[],
): Promise<{ puts: Record<string, unknown>[]; deletes: { PK: string; SK: string }[] }> {
  const present = await batchGetItems(add.map((token) => keys.agentToken(token, uuid)));
  return {
    puts: add
      .filter((_, index) => !present.has(index))
      .map((token) => ({ ...keys.agentToken(token, uuid), uuid, token })),
    deletes: remove.map((token) => keys.agentToken(token, uuid)),
  };
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
