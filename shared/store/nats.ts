import { DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { ChangeStamp } from './changes.js';
import { conditionalWrite, documentClient, getItem, keys, tableName, withoutKeys } from './client.js';
import { queryPartition } from './query.js';

/**
 * The NATS hub record leaves dial: on a remote control plane the system agent's NATS server,
 * on Kubernetes what the operator registers. A port not given is NATS's default (`DEFAULT_NATS_PORTS`).
 */
export interface NatsHubRow {
  host: string;
  serverPort: number;
  clusterPort: number;
  leafPort: number;
  mqttPort: number;
  httpPort: number;
  /** JetStream sizes the operator registered (normalised), or null. */
  jsStorageSize?: string | null;
  jsMemoryStoreSize?: string | null;
  /** The agent whose NATS server is the hub (remote), or null. */
  agentUuid: string | null;
  updatedAt: string;
}

export async function putNatsHub(row: NatsHubRow): Promise<void> {
  await documentClient().send(
    new PutCommand({ TableName: tableName(), Item: { ...keys.natsHub(), ...row } }),
  );
}

export function getNatsHub(): Promise<NatsHubRow | undefined> {
  return getItem<NatsHubRow>(keys.natsHub());
}

/** Sets the hub only if none exists yet (first-agent promotion); true when this call set it. */
export function putNatsHubIfAbsent(row: NatsHubRow): Promise<boolean> {
  return conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.natsHub(), ...row },
      ConditionExpression: 'attribute_not_exists(PK)',
    }),
  );
}

/** Removes the hub record when it is this agent's NATS server. */
export async function releaseNatsHub(agentUuid: string): Promise<void> {
  await conditionalWrite(
    new DeleteCommand({
      TableName: tableName(),
      Key: keys.natsHub(),
      ConditionExpression: 'agentUuid = :uuid',
      ExpressionAttributeValues: { ':uuid': agentUuid },
    }),
  );
}

export async function deleteNatsHub(): Promise<void> {
  await documentClient().send(new DeleteCommand({ TableName: tableName(), Key: keys.natsHub() }));
}

/**
 * The NATS servers of the fleet's agents, one small item each in one partition: what every server's
 * cluster routes (and, on Kubernetes, the operator's `iofog-nats-config`) are computed from, written by
 * each agent's own fog reconcile from its row, so a server's arrival, move or removal is seen by one
 * Query rather than a scan of every agent.
 */
export interface NatsServerRow {
  agentUuid: string;
  host: string;
  clusterPort: number;
  leafPort: number;
  updatedAt: string;
}

export async function listNatsServers(): Promise<NatsServerRow[]> {
  return (await queryPartition<Record<string, unknown>>(keys.natsServer('').PK)).map(
    (item) => withoutKeys<NatsServerRow>(item)!,
  );
}

export function getNatsServer(agentUuid: string): Promise<NatsServerRow | undefined> {
  return getItem<NatsServerRow>(keys.natsServer(agentUuid));
}

export async function putNatsServer(row: NatsServerRow): Promise<void> {
  await documentClient().send(
    new PutCommand({ TableName: tableName(), Item: { ...keys.natsServer(row.agentUuid), ...row } }),
  );
}

export async function deleteNatsServer(agentUuid: string): Promise<void> {
  await documentClient().send(new DeleteCommand({ TableName: tableName(), Key: keys.natsServer(agentUuid) }));
}

/**
 * What an agent's NATS process was last made of: the names of everything fogbridge keeps for it (so a
 * mode change or the agent's removal finds what to delete without its row) and the microservice Edgelet
 * runs, minus the JetStream key (read from its sealed mount when delivered).
 */
/** What an agent's NATS process is: the hub, another server, or a leaf. */
export type NatsRole = 'hub' | 'server' | 'leaf';

export interface NatsInstanceRow {
  agentUuid: string;
  role: NatsRole;
  template: string;
  certificates: string[];
  mounts: string[];
  users: string[];
  /** The applications whose accounts a leaf links into (its JWT directory holds them). */
  leafAccounts?: string[];
  /** The agent's name as its NATS artefacts are named (`leaf-<token>` is its user in each account). */
  agentToken?: string;
  microservice: NatsMicroserviceSpec;
  specHash: string;
  /**
   * The change-counter stamp of a rebuild asked for by an earlier release (Edgelet rebuilds until it
   * acknowledges it); rebuilds are now stamped on the agent's change record (`rebuildNats`).
   */
  rebuildSeq: number;
  /** What the agent is still to be told of this row (see reconcile/nats-instance.ts `deliver`). */
  pendingTell?: { stamps: ChangeStamp[]; directory: boolean };
  updatedAt: string;
}

export interface NatsMicroserviceSpec {
  application: string;
  imageId: string;
  registryId: number;
  ports: number[];
  env: { key: string; value: string }[];
  volumeMappings: {
    hostDestination: string;
    containerDestination: string;
    accessMode: string;
    type: string;
  }[];
  /** The sealed mount that holds the JetStream key (`jsk`), delivered as JETSTREAM_KEY. */
  jetstreamKeyMount: string;
}

export function getNatsInstance(agentUuid: string): Promise<NatsInstanceRow | undefined> {
  return getItem<NatsInstanceRow>(keys.natsInstance(agentUuid));
}

export async function putNatsInstance(row: NatsInstanceRow): Promise<void> {
  await documentClient().send(
    new PutCommand({ TableName: tableName(), Item: { ...keys.natsInstance(row.agentUuid), ...row } }),
  );
}

/** The agent was told of the row as it stands: what was pending goes (a row gone meanwhile stays gone). */
export async function clearPendingTell(agentUuid: string): Promise<void> {
  await conditionalWrite(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.natsInstance(agentUuid),
      UpdateExpression: 'REMOVE pendingTell',
      ConditionExpression: 'attribute_exists(PK)',
    }),
  );
}

export async function deleteNatsInstance(agentUuid: string): Promise<void> {
  await documentClient().send(
    new DeleteCommand({ TableName: tableName(), Key: keys.natsInstance(agentUuid) }),
  );
}

/**
 * A restart of the operator's `nats` StatefulSet owed since a route was removed from `iofog-nats-config`:
 * recorded before the ConfigMap is written and cleared after the restart, so a failure in between is
 * retried rather than forgotten (the ConfigMap alone no longer shows the removal).
 */
export async function getNatsHubRestartOwed(): Promise<string | undefined> {
  return (await getItem<{ since: string }>(keys.natsHubRestart()))?.since;
}

export async function oweNatsHubRestart(): Promise<void> {
  await documentClient().send(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.natsHubRestart(), since: new Date().toISOString() },
    }),
  );
}

export async function clearNatsHubRestart(since: string): Promise<void> {
  await conditionalWrite(
    new DeleteCommand({
      TableName: tableName(),
      Key: keys.natsHubRestart(),
      ConditionExpression: 'since = :since',
      ExpressionAttributeValues: { ':since': since },
    }),
  );
}
