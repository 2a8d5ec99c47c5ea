import { createHash } from 'node:crypto';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mapWithConcurrency } from '../concurrency.js';
import {
  batchGetItems,
  batchWriteItems,
  conditionalWrite,
  documentClient,
  keys,
  tableName,
} from './client.js';
import { queryAll } from './query.js';
import { outsideReadSnapshot } from './snapshot.js';

/**
 * Which agents have not yet applied a change to their router config. A change fogbridge tells an agent
 * of leaves a marker: for one service (its listener or connector on that agent changed) or for the
 * agent's whole router (its own part, its selection of services, or a rebuild). The marker holds the
 * agent's change counter as read after the change was in place (`afterSeq`); an acknowledgement above
 * it means the agent fetched its config after the change, so the marker goes. Markers are few (they
 * last from a change until the agent's next poll), so the per-site status of every service is read
 * from them and the token index, never from one item per agent.
 *
 * They live in a handful of partitions (by agent), not one, so a fan-out to thousands of agents spreads
 * its writes.
 */
const PARTITIONS = 4;

/** A router-wide marker, or one service's. */
export type PendingScope = { router: true } | { service: string };

export interface PendingSite {
  agentUuid: string;
  /** The service the marker is about; absent for a router-wide one. */
  service?: string;
  afterSeq: number;
  /** When the first change still unapplied was told (ISO time). */
  since: string;
  /** A router-wide marker written with the agent, until its router's first config is written. */
  firstConfig?: boolean;
  /** Written before the agent was told (a service reconcile's): no acknowledgement clears it until then. */
  awaiting?: boolean;
}

const partitionOf = (agentUuid: string) =>
  `SITEPENDING#${createHash('sha1').update(agentUuid).digest()[0]! % PARTITIONS}`;

const sortKey = (agentUuid: string, scope: PendingScope) =>
  'router' in scope ? `${agentUuid}#ROUTER` : `${agentUuid}#SVC#${scope.service}`;

export const pendingSiteKey = (agentUuid: string, scope: PendingScope) => ({
  PK: partitionOf(agentUuid),
  SK: sortKey(agentUuid, scope),
});

/**
 * The agent's change counter as the store holds it now (never from a read snapshot): read after a
 * change is written, it is what a marker for that change waits to see acknowledged past.
 */
export async function changeCounterNow(agentUuid: string): Promise<number> {
  return outsideReadSnapshot(async () => {
    const { Item } = await documentClient().send(
      new GetCommand({
        TableName: tableName(),
        Key: keys.changes(agentUuid),
        ConsistentRead: true,
        ProjectionExpression: 'changeSeq',
      }),
    );
    return Number(Item?.changeSeq ?? 0);
  });
}

/**
 * Marks the agent as not having applied a change yet. `afterSeq` is its change counter read after the
 * change was in place (or, once the agent was told, the stamp of that raise minus one); a marker already
 * waiting for a later value keeps it, and `since` keeps the time of the first unapplied change. With
 * `built`, a router-wide marker stops saying the router's first config is not written yet; with `told`,
 * a marker written before the agent was told stops `awaiting`; with `awaiting`, it starts (a change the
 * agent is not told of yet: no acknowledgement clears it until it is).
 */
export async function markSitePending(
  agentUuid: string,
  scope: PendingScope,
  afterSeq: number,
  options: { built?: boolean; told?: boolean; awaiting?: boolean } = {},
): Promise<void> {
  await conditionalWrite(
    new UpdateCommand({
      TableName: tableName(),
      Key: pendingSiteKey(agentUuid, scope),
      UpdateExpression:
        'SET afterSeq = :after, agentUuid = :agent, since = if_not_exists(since, :now)' +
        ('service' in scope ? ', service = :service' : '') +
        (options.awaiting ? ', awaiting = :awaiting' : '') +
        (options.built || options.told
          ? ` REMOVE ${[...(options.built ? ['firstConfig'] : []), ...(options.told ? ['awaiting'] : [])].join(', ')}`
          : ''),
      ConditionExpression: options.awaiting
        ? undefined
        : `attribute_not_exists(afterSeq) OR afterSeq < :after${options.built ? ' OR attribute_exists(firstConfig)' : ''}${options.told ? ' OR attribute_exists(awaiting)' : ''}`,
      ExpressionAttributeValues: {
        ':after': afterSeq,
        ':agent': agentUuid,
        ':now': new Date().toISOString(),
        ...('service' in scope ? { ':service': scope.service } : {}),
        ...(options.awaiting ? { ':awaiting': true } : {}),
      },
    }),
  );
}

/**
 * A new agent's router-wide marker: it has applied nothing, and its router's first config is not
 * written yet (`firstConfig`, which the first write removes; no acknowledgement clears it before). Once
 * that config is written and told, the marker waits for the raise that told it.
 */
export async function markNewSite(agentUuid: string): Promise<void> {
  await documentClient().send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        ...pendingSiteKey(agentUuid, { router: true }),
        agentUuid,
        afterSeq: 0,
        since: new Date().toISOString(),
        firstConfig: true,
      },
    }),
  );
}

/**
 * A service's listener in the distribution sets changed (the sets are written): every agent that selects
 * it has not applied it until it acknowledges past its change counter as read now. The counters are read
 * in batches and the markers written in batches, before the agents are asked, so an agent counts as not
 * having applied the change from the moment it was made, whenever its fog reconcile runs.
 */
export async function markSelectingSitesPending(
  agentUuids: readonly string[],
  service: string,
): Promise<void> {
  if (agentUuids.length === 0) return;
  const counters = await outsideReadSnapshot(() =>
    batchGetItems<{ changeSeq?: number }>(agentUuids.map((uuid) => keys.changes(uuid))),
  );
  const since = new Date().toISOString();
  await batchWriteItems(
    agentUuids.map((agentUuid, index) => ({
      ...pendingSiteKey(agentUuid, { service }),
      agentUuid,
      service,
      afterSeq: Number(counters.get(index)?.changeSeq ?? 0),
      since,
      // Its fog reconcile tells the agent; until then no acknowledgement of anything else clears it.
      awaiting: true,
    })),
    [],
  );
}

/** The agent's markers. */
async function pendingOfAgent(agentUuid: string): Promise<(PendingSite & { SK: string })[]> {
  return queryAll<PendingSite & { SK: string }>({
    KeyConditionExpression: 'PK = :pk AND begins_with(SK, :agent)',
    ExpressionAttributeValues: { ':pk': partitionOf(agentUuid), ':agent': `${agentUuid}#` },
    ConsistentRead: true,
  });
}

/**
 * The agent acknowledged its changes up to `acknowledged`: every marker waiting for less goes (each
 * only if no later change moved it meanwhile).
 */
export async function clearAppliedSites(agentUuid: string, acknowledged: number): Promise<void> {
  // A new agent's marker waits for its router's first config whatever it acknowledges meanwhile.
  const applied = (await pendingOfAgent(agentUuid)).filter(
    (site) => site.afterSeq < acknowledged && !site.firstConfig && !site.awaiting,
  );
  await mapWithConcurrency(applied, 8, async (site) => {
    await conditionalWrite(
      new DeleteCommand({
        TableName: tableName(),
        Key: { PK: partitionOf(agentUuid), SK: site.SK },
        ConditionExpression: 'afterSeq = :seen',
        ExpressionAttributeValues: { ':seen': site.afterSeq },
      }),
    );
  });
}

/**
 * Every marker of the fleet still waiting (a few consistent queries: markers last only until the next
 * poll). A marker the agent has acknowledged past is not waiting, even before its acknowledgement
 * removed it (a marker raised again after the agent already fetched the change it marks).
 */
export async function listPendingSites(): Promise<PendingSite[]> {
  const partitions = Array.from({ length: PARTITIONS }, (_, index) => `SITEPENDING#${index}`);
  const pages = await Promise.all(
    partitions.map((pk) =>
      queryAll<PendingSite>({
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        ConsistentRead: true,
      }),
    ),
  );
  const markers = pages.flat();
  const agents = [...new Set(markers.map((marker) => marker.agentUuid))];
  const found = await batchGetItems<{ ackedSeq?: number }>(agents.map((uuid) => keys.changes(uuid)));
  const acknowledged = new Map(agents.map((uuid, index) => [uuid, Number(found.get(index)?.ackedSeq ?? 0)]));
  return markers.filter(
    (marker) =>
      marker.firstConfig || marker.awaiting || !(marker.afterSeq < (acknowledged.get(marker.agentUuid) ?? 0)),
  );
}

/** A deleted agent's markers. */
export async function forgetPendingSites(agentUuid: string): Promise<void> {
  const sites = await pendingOfAgent(agentUuid);
  await batchWriteItems(
    [],
    sites.map((site) => ({ PK: partitionOf(agentUuid), SK: site.SK })),
  );
}
