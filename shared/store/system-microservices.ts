import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { ControllerRegisterBody } from '../domain/agent-protocol-schema.js';
import { documentClient, keys, tableName, withoutKeys } from './client.js';

/** The Controller microservice a system agent registered (what its Edgelet sent, as it sent it). */
export interface ControllerMicroserviceRow extends ControllerRegisterBody {
  agentUuid: string;
  createdAt: string;
  updatedAt: string;
}

export async function getControllerMicroservice(
  agentUuid: string,
): Promise<ControllerMicroserviceRow | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({
      TableName: tableName(),
      Key: keys.systemMicroservice(agentUuid, 'controller'),
      ConsistentRead: true,
    }),
  );
  return withoutKeys<ControllerMicroserviceRow>(Item);
}

export async function putControllerMicroservice(row: ControllerMicroserviceRow): Promise<void> {
  await documentClient().send(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.systemMicroservice(row.agentUuid, 'controller'), ...row },
    }),
  );
}
