import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { conditionalWrite, documentClient, getItem, keys, tableName } from './client.js';

/**
 * The NATS hub record leaves dial (seed 001): on a remote control plane the system agent's NATS server,
 * on Kubernetes what the operator registers. Ports default as the seeds give them.
 */
export interface NatsHubRow {
  host: string;
  serverPort: number;
  clusterPort: number;
  leafPort: number;
  mqttPort: number;
  httpPort: number;
  /** The agent whose NATS server is the hub (remote), or null. */
  agentUuid: string | null;
  updatedAt: string;
}

export const NATS_HUB_PORTS = {
  serverPort: 4222,
  clusterPort: 6222,
  leafPort: 7422,
  mqttPort: 8883,
  httpPort: 8222,
};

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
