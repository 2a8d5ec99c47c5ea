import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { TcpListener } from '../domain/router-objects.js';
import type { ProvisioningStatus, ServiceSpec, ServiceView } from '../domain/service.js';
import { ConflictError } from '../errors.js';
import { CONFLICT, retryOnConflict } from '../retry.js';
import { recordApplied } from './applied.js';
import {
  batchWriteItems,
  conditionalWrite,
  documentClient,
  indexes,
  isConditionalCheckFailed,
  keys,
  tableName,
  withoutKeys,
} from './client.js';
import { queryIndex, queryPage, queryPartition } from './query.js';

/**
 * A service row. Besides the spec and the public status it carries reconcile bookkeeping:
 * `generation` grows with every user change, `observedGeneration` is what reconcile last converged,
 * and `deleted` marks a row whose cleanup is still running. Where reconcile applied the name (tokens,
 * routers) is kept apart, in store/applied.ts, so that rewriting this row can never lose it.
 */
export interface ServiceRow extends ServiceSpec {
  bridgePort: number | null;
  serviceEndpoint: string | null;
  provisioningStatus: ProvisioningStatus;
  provisioningError: string | null;
  generation: number;
  observedGeneration: number;
  /** The generation at which this name was (re)created; names the row's bridge-port claim. */
  incarnation: number;
  /**
   * The connector router: the router key whose config holds the connector (an agent uuid or
   * `default-router`). Stored under this attribute name, which the index `SITE#<router>` is built from.
   */
  siteKey: string | null;
  deleted: boolean;
  createdAt: string;
  updatedAt: string;
}

export function toServiceView(row: ServiceRow): ServiceView {
  return {
    name: row.name,
    type: row.type,
    resource: row.resource,
    targetPort: row.targetPort,
    servicePort: row.servicePort ?? null,
    k8sType: row.k8sType ?? null,
    defaultBridge: row.defaultBridge,
    bridgePort: row.bridgePort,
    serviceEndpoint: row.serviceEndpoint,
    tags: row.tags,
    provisioningStatus: row.provisioningStatus,
    provisioningError: row.provisioningError,
  };
}

/** Index attributes derived from the row; a deleted row leaves every index but `pending`. */
function indexAttributes(row: ServiceRow) {
  const live = !row.deleted;
  return {
    GSI1PK: live ? 'SVC' : undefined,
    GSI1SK: live ? row.name : undefined,
    GSI2PK: live ? `HUB#${row.defaultBridge}` : undefined,
    GSI2SK: live ? row.name : undefined,
    GSI3PK: live && row.siteKey ? `SITE#${row.siteKey}` : undefined,
    GSI3SK: live && row.siteKey ? `SVC#${row.name}` : undefined,
    GSI4PK: row.generation > row.observedGeneration ? 'PENDING' : undefined,
    GSI4SK: row.generation > row.observedGeneration ? `SVC#${row.name}` : undefined,
  };
}

function strip(item: Record<string, unknown> | undefined): ServiceRow | undefined {
  if (!item) return undefined;
  const { PK, SK, GSI1PK, GSI1SK, GSI2PK, GSI2SK, GSI3PK, GSI3SK, GSI4PK, GSI4SK, ...row } = item;
  return row as unknown as ServiceRow;
}

export async function getServiceRow(name: string): Promise<ServiceRow | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({ TableName: tableName(), Key: keys.service(name), ConsistentRead: true }),
  );
  return strip(Item);
}

/** Live (not deleted) services, sorted by name. */
export async function listServiceRows(): Promise<ServiceRow[]> {
  const items = await queryIndex<Record<string, unknown>>(indexes.byKind, 'SVC');
  return items.map((item) => strip(item)!).filter((row) => !row.deleted);
}

/** One page of the service list (tombstones included), for checks that rotate over every service. */
export async function listServiceRowPage(
  cursor: Record<string, unknown> | undefined,
  limit: number,
): Promise<{ rows: ServiceRow[]; next: Record<string, unknown> | undefined }> {
  const { items, next } = await queryPage<Record<string, unknown>>(
    {
      IndexName: indexes.byKind,
      KeyConditionExpression: 'GSI1PK = :kind',
      ExpressionAttributeValues: { ':kind': 'SVC' },
    },
    cursor,
    limit,
  );
  return { rows: items.map((item) => strip(item)!), next };
}

/** A live service whose reconcile has caught up with its row (what the drift checks compare). */
export const isConvergedService = (row: ServiceRow): boolean =>
  !row.deleted && row.observedGeneration >= row.generation;

export async function listServicesByHub(bridge: string): Promise<ServiceRow[]> {
  const items = await queryIndex<Record<string, unknown>>(indexes.byHub, `HUB#${bridge}`);
  return items.map((item) => strip(item)!).filter((row) => !row.deleted);
}

export async function listServicesByConnectorRouter(siteKey: string): Promise<ServiceRow[]> {
  const items = await queryIndex<Record<string, unknown>>(indexes.bySite, `SITE#${siteKey}`);
  return items.map((item) => strip(item)!).filter((row) => !row.deleted && row.siteKey === siteKey);
}

/** Writes a row for a name that has none (no live row, no tombstone); false when the name is taken. */
export function putServiceRowIfAbsent(row: ServiceRow): Promise<boolean> {
  return conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.service(row.name), ...row, ...indexAttributes(row) },
      ConditionExpression: 'attribute_not_exists(PK)',
    }),
  );
}

/**
 * Writes a new row. A name held by a live row is a conflict; a row still being deleted is replaced,
 * and the routers it was applied to are carried over so the new row's reconcile cleans them.
 */
export async function putNewServiceRow(row: ServiceRow): Promise<ServiceRow> {
  // Up to three reads: a tombstone can finish its cleanup (and vanish) between the read and the put.
  return retryOnConflict(
    async () => {
      const existing = await getServiceRow(row.name);
      if (existing && !existing.deleted)
        throw new ConflictError(`Service with name ${row.name} already exists`);
      // The tombstone's connector router may hold an entry no reconcile recorded yet (a router's full
      // recompute wrote it from the index before the old incarnation's fan-out ran): recorded first, so
      // the new row's reconcile asks that router to drop what the old one left.
      if (existing?.siteKey) await recordApplied({ service: row.name }, { routers: [existing.siteKey] });
      const next: ServiceRow = existing
        ? {
            ...row,
            generation: existing.generation + 1,
            incarnation: existing.generation + 1,
            observedGeneration: existing.observedGeneration,
          }
        : row;
      const written = await conditionalWrite(
        new PutCommand({
          TableName: tableName(),
          Item: { ...keys.service(row.name), ...next, ...indexAttributes(next) },
          ConditionExpression: existing ? '#g = :g AND deleted = :true' : 'attribute_not_exists(PK)',
          ...(existing
            ? {
                ExpressionAttributeNames: { '#g': 'generation' },
                ExpressionAttributeValues: { ':g': existing.generation, ':true': true },
              }
            : {}),
        }),
      );
      return written ? next : CONFLICT;
    },
    { times: 3, exhausted: () => new ConflictError(`Service with name ${row.name} already exists`) },
  );
}

/**
 * Replaces a row written at `expectedGeneration`; false when someone else wrote it first (the caller
 * re-reads and decides again).
 */
export async function replaceServiceRow(next: ServiceRow, expectedGeneration: number): Promise<boolean> {
  return conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.service(next.name), ...next, ...indexAttributes(next) },
      ConditionExpression: '#g = :g',
      ExpressionAttributeNames: { '#g': 'generation' },
      ExpressionAttributeValues: { ':g': expectedGeneration },
    }),
  );
}

/**
 * Asks a live service to be reconciled again without changing what it says (its hub moved, say): one
 * atomic increment of its generation, so any number of callers at once each get their own generation
 * and none has to retry. Returns the row as written, or undefined for a row that is gone or deleted.
 */
export async function bumpServiceGeneration(name: string): Promise<ServiceRow | undefined> {
  try {
    const { Attributes } = await documentClient().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.service(name),
        UpdateExpression:
          'SET #g = #g + :one, provisioningStatus = :pending, updatedAt = :now, GSI4PK = :gsi4pk, GSI4SK = :gsi4sk',
        ConditionExpression: 'attribute_exists(PK) AND deleted = :false',
        ExpressionAttributeNames: { '#g': 'generation' },
        ExpressionAttributeValues: {
          ':one': 1,
          ':pending': 'pending',
          ':now': new Date().toISOString(),
          ':gsi4pk': 'PENDING',
          ':gsi4sk': `SVC#${name}`,
          ':false': false,
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return withoutKeys<ServiceRow>(Attributes);
  } catch (error) {
    if (isConditionalCheckFailed(error)) return undefined;
    throw error;
  }
}

/** Removes a deleted row once its cleanup converged, unless it was recreated meanwhile. */
export async function removeServiceTombstone(name: string, generation: number): Promise<boolean> {
  return conditionalWrite(
    new DeleteCommand({
      TableName: tableName(),
      Key: keys.service(name),
      ConditionExpression: '#g = :g AND deleted = :true',
      ExpressionAttributeNames: { '#g': 'generation' },
      ExpressionAttributeValues: { ':g': generation, ':true': true },
    }),
  );
}

/** Rows whose generation is ahead of reconcile (the sweeper's work list). */
export async function listPendingServiceNames(): Promise<
  { name: string; generation: number; updatedAt: string }[]
> {
  const items = await queryIndex<Record<string, unknown>>(indexes.pending, 'PENDING');
  return items
    .filter((item) => String(item.GSI4SK).startsWith('SVC#'))
    .map((item) => ({
      name: String(item.name),
      generation: Number(item.generation),
      updatedAt: String(item.updatedAt),
    }));
}

/**
 * Writes the service's token index entries for `add` (every desired token, each reconcile: an entry an
 * interrupted one deleted comes back) and deletes those for `remove`, in one BatchWriteItem (25 at a
 * time). Unconditional: a service's entries are written only by its own reconcile, one at a time in its
 * message group.
 */
export async function setServiceTokens(
  name: string,
  add: string[],
  remove: string[],
  listener?: TcpListener,
): Promise<void> {
  await batchWriteItems(
    add.map((token) => ({
      ...keys.serviceToken(token, name),
      name,
      token,
      ...(listener ? { listener } : {}),
    })),
    remove.map((token) => keys.serviceToken(token, name)),
  );
}

/** Updates only the status fields, when the row is still at `generation`. */
export async function recordServiceStatus(
  name: string,
  generation: number,
  status: { provisioningStatus: ProvisioningStatus; provisioningError: string | null },
): Promise<boolean> {
  return conditionalWrite(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.service(name),
      UpdateExpression: 'SET provisioningStatus = :s, provisioningError = :e, updatedAt = :now',
      ConditionExpression: '#g = :g',
      ExpressionAttributeNames: { '#g': 'generation' },
      ExpressionAttributeValues: {
        ':s': status.provisioningStatus,
        ':e': status.provisioningError,
        ':g': generation,
        ':now': new Date().toISOString(),
      },
    }),
  );
}

/** Service names whose token index entry holds `token` (entries may lag the rows; callers re-check). */
export async function listServiceNamesByToken(token: string): Promise<string[]> {
  const items = await queryPartition<{ name: string }>(`TOKEN#${token}`);
  return items.map((item) => item.name);
}
