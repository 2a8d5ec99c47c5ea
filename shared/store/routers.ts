import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { config } from '../context.js';
import { listenerSetsOfAgent } from '../domain/placement.js';
import {
  applyDesiredBridges,
  type BridgeMap,
  composeRouterConfig,
  type DesiredBridges,
  initialRouterConfig,
  type RouterConfig,
  type RouterEntryChanges,
} from '../domain/router-config.js';
import {
  connectorName,
  listenerName,
  type TcpConnector,
  type TcpListener,
} from '../domain/router-objects.js';
import { ReconcileError } from '../errors.js';
import { faultArmed } from '../faults.js';
import type { AgentRow } from './agents.js';
import { batchWriteItems, conditionalWrite, documentClient, keys, tableName, withoutKeys } from './client.js';
import { queryAll, queryPage, queryPartition } from './query.js';
import { knownAbsent } from './snapshot.js';

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
  /** The distribution sets whose listeners the router's config is composed with (its agent's tokens). */
  selects?: string[];
  /**
   * What the stored entries were last computed in full for (the hub key and the agent's router mode,
   * the only parts of the router that placement reads): while it holds, a change to the agent's own part
   * rewrites only the base item, without listing every service again.
   */
  bridgesFor?: string;
  /**
   * The digest of what the agent's router starts with (`routerStartDigest`: its container and its
   * config without `bridges`) as last written: a write that changes it owes the agent a rebuild.
   */
  startDigest?: string;
  /** The digest of the start the agent was last told of (a rebuild raised, or its router's first). */
  startDigestTold?: string;
  updatedAt: string;
}

/**
 * The base item's parts besides its config: the sets it selects, what its entries were computed for,
 * and the digest of what its router starts with.
 */
export interface RouterBaseParts {
  selects?: readonly string[];
  bridgesFor?: string;
  startDigest?: string;
  startDigestTold?: string;
}

/** The parts of a stored base item, to write it again with only its config or entries changed. */
export function basePartsOf(row: RouterConfigRow): RouterBaseParts {
  return {
    ...(row.selects ? { selects: row.selects } : {}),
    ...(row.bridgesFor ? { bridgesFor: row.bridgesFor } : {}),
    ...(row.startDigest ? { startDigest: row.startDigest } : {}),
    ...(row.startDigestTold ? { startDigestTold: row.startDigestTold } : {}),
  };
}

/**
 * Records that the agent was told of the start `digest` of its router (its rebuild stamp is raised),
 * if its base item still has that start; the version moves, so a writer that read the item before
 * writes again from what it reads now.
 */
export async function markStartTold(routerKey: string, digest: string): Promise<void> {
  await conditionalWrite(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.routerConfig(routerKey),
      UpdateExpression: 'SET startDigestTold = :digest, version = version + :one',
      ConditionExpression: 'startDigest = :digest',
      ExpressionAttributeValues: { ':digest': digest, ':one': 1 },
    }),
  );
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

/**
 * A router's config is stored in parts, so that no item grows with the number of services or agents:
 * the base item (`RouterConfigRow`: the router's own part, any entry fogbridge does not manage, and the
 * version every write is conditioned on), one item per managed entry in the same partition, and the
 * listeners of the distribution sets its agent selects (the token index, shared by every agent).
 */
export interface StoredRouter {
  row: RouterConfigRow | undefined;
  entries: DesiredBridges;
}

interface RouterEntryItem {
  SK: string;
  entry: TcpListener | TcpConnector;
}

/**
 * The base item and every stored entry of a router: one Query of its partition, or none when the read
 * snapshot in force found no base item (an entry is only ever written under an existing base: see
 * `putRouterParts` and `deleteRouterConfig`).
 */
export async function readStoredRouter(routerKey: string): Promise<StoredRouter> {
  if (knownAbsent(keys.routerConfig(routerKey))) {
    return { row: undefined, entries: { listeners: [], connectors: [] } };
  }
  const items = await queryPartition<Record<string, unknown>>(keys.routerConfig(routerKey).PK);
  const stored: StoredRouter = { row: undefined, entries: { listeners: [], connectors: [] } };
  for (const item of items) {
    if (item.SK === keys.routerConfig(routerKey).SK) stored.row = withoutKeys<RouterConfigRow>(item);
    else addEntry(stored.entries, item as unknown as RouterEntryItem);
  }
  return stored;
}

function addEntry(entries: DesiredBridges, item: RouterEntryItem | undefined): void {
  if (!item?.entry) return;
  if (item.SK.startsWith('ENTRY#tcpListeners#')) entries.listeners.push(item.entry as TcpListener);
  else if (item.SK.startsWith('ENTRY#tcpConnectors#')) entries.connectors.push(item.entry as TcpConnector);
}

/** A managed entry stored under a router, with the name of the service it belongs to. */
export interface StoredRouterEntry {
  service: string;
  map: BridgeMap;
  entry: TcpListener | TcpConnector;
}

/**
 * Up to `limit` of the entries stored under a router, in key order after `cursor`, and where the next
 * page starts (none after the last). A cursor left in another router's partition starts from the top.
 */
export async function listRouterEntryPage(
  routerKey: string,
  cursor: Record<string, unknown> | undefined,
  limit: number,
): Promise<{ entries: StoredRouterEntry[]; next: Record<string, unknown> | undefined }> {
  const partition = keys.routerConfig(routerKey).PK;
  const { items, next } = await queryPage<RouterEntryItem>(
    {
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :entry)',
      ExpressionAttributeValues: { ':pk': partition, ':entry': 'ENTRY#' },
      ConsistentRead: true,
    },
    cursor?.PK === partition ? cursor : undefined,
    limit,
  );
  const entries = items.flatMap((item): StoredRouterEntry[] => {
    const map = item.SK.startsWith('ENTRY#tcpListeners#') ? 'tcpListeners' : 'tcpConnectors';
    const name = item.SK.slice(`ENTRY#${map}#`.length);
    const service = name.replace(map === 'tcpListeners' ? /-listener$/ : /-connector$/, '');
    return item.entry ? [{ service, map, entry: item.entry }] : [];
  });
  return { entries, next };
}

/** The keys of one service's two entries under a router (its listener and its connector). */
export function serviceEntryKeys(routerKey: string, serviceName: string) {
  return {
    listener: keys.routerEntry(routerKey, 'tcpListeners', listenerName(serviceName)),
    connector: keys.routerEntry(routerKey, 'tcpConnectors', connectorName(serviceName)),
  };
}

/** What the items read by `serviceEntryKeys` hold (the listener's item, the connector's), as entries. */
export function entriesFromItems(
  listenerItem: Record<string, unknown> | undefined,
  connectorItem: Record<string, unknown> | undefined,
): DesiredBridges {
  const listener = listenerItem?.entry as TcpListener | undefined;
  const connector = connectorItem?.entry as TcpConnector | undefined;
  return { listeners: listener ? [listener] : [], connectors: connector ? [connector] : [] };
}

/** The listeners of the given distribution sets (services without a bridge port yet have none). */
export async function readSelectedListeners(sets: readonly string[]): Promise<TcpListener[]> {
  const pages = await Promise.all(
    sets.map((set) =>
      queryAll<{ listener?: TcpListener }>({
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': `TOKEN#${set}` },
        ProjectionExpression: 'listener',
        ConsistentRead: true,
      }),
    ),
  );
  return pages.flat().flatMap((item) => (item.listener ? [item.listener] : []));
}

/**
 * A router's config as its router receives it: the stored parts composed (or its initial config when
 * nothing is stored), with the listeners of the sets its agent selects.
 */
export async function readRouterConfig(
  routerKey: string,
  isHub: boolean,
  agent?: { routerMode: AgentRow['routerMode']; tags: readonly string[] },
): Promise<RouterConfig> {
  const [stored, selected] = await Promise.all([
    readStoredRouter(routerKey),
    agent ? readSelectedListeners(listenerSetsOfAgent(agent, config().serviceAnnotationTag)) : [],
  ]);
  return composeRouterConfig(stored.row?.config ?? initialRouterConfig(isHub), stored.entries, selected);
}

/**
 * Writes a router's changed entries, then its base item if nobody wrote it since `expectedVersion` was
 * read (0 = not yet created). The base carries no managed entry. Returns false on a lost race: the
 * entries written may then be another computation's, and the caller recomputes from the store and
 * writes again, so the last computation to start is the one that stands.
 * Entries are only ever written under an existing base item, so a router without one holds none (its
 * first computation need not look): a first write with entries creates the base first (without
 * `bridgesFor`, so nothing takes its entries as computed until the second base write says so).
 */
export async function putRouterParts(
  routerKey: string,
  base: RouterConfig,
  changes: RouterEntryChanges,
  expectedVersion: number,
  parts: RouterBaseParts = {},
): Promise<boolean> {
  // Fault injection: behave as if another writer had won the race.
  if (faultArmed('store:router-config-conflict')) return false;
  const stripped = applyDesiredBridges(base, { listeners: [], connectors: [] });
  refuseOversizedRouterConfig(routerKey, stripped);
  if (expectedVersion === 0 && changes.put.length > 0) {
    const { bridgesFor: _computedFor, ...created } = parts;
    if (!(await putRouterConfig(routerKey, stripped, 0, created))) return false;
    return putRouterParts(routerKey, base, changes, 1, parts);
  }
  await batchWriteItems(
    changes.put.map(({ map, entry }) => ({
      ...keys.routerEntry(routerKey, map, entry.name),
      routerKey,
      entry,
    })),
    changes.remove.map(({ map, name }) => keys.routerEntry(routerKey, map, name)),
  );
  return putRouterConfig(routerKey, stripped, expectedVersion, parts);
}

/**
 * Writes a router's base item if nobody wrote it since `expectedVersion` was read (0 = not yet created).
 * Returns false on a lost race; the caller recomputes from the store and tries again.
 */
export async function putRouterConfig(
  routerKey: string,
  config: RouterConfig,
  expectedVersion: number,
  { selects = [], bridgesFor, startDigest, startDigestTold }: RouterBaseParts = {},
): Promise<boolean> {
  refuseOversizedRouterConfig(routerKey, config);
  return conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: {
        ...keys.routerConfig(routerKey),
        routerKey,
        config,
        ...(selects.length > 0 ? { selects: [...selects] } : {}),
        ...(bridgesFor ? { bridgesFor } : {}),
        ...(startDigest ? { startDigest } : {}),
        ...(startDigestTold ? { startDigestTold } : {}),
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

/** Deletes every entry stored under a router, then its base item (entries never outlive their base). */
export async function deleteRouterConfig(routerKey: string): Promise<void> {
  const items = await queryAll<{ PK: string; SK: string }>({
    KeyConditionExpression: 'PK = :pk',
    ExpressionAttributeValues: { ':pk': keys.routerConfig(routerKey).PK },
    ProjectionExpression: 'PK, SK',
    ConsistentRead: true,
  });
  const base = keys.routerConfig(routerKey);
  const entries = items.filter((item) => item.SK !== base.SK).map((item) => ({ PK: item.PK, SK: item.SK }));
  if (entries.length > 0) await batchWriteItems([], entries);
  if (entries.length < items.length) await batchWriteItems([], [base]);
}

export async function deleteDefaultRouter(): Promise<void> {
  await documentClient().send(new DeleteCommand({ TableName: tableName(), Key: keys.defaultRouter() }));
}
