import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { conditionalWrite, documentClient, isConditionalCheckFailed, tableName } from './client.js';

/**
 * Provisioning keys are stored only as their SHA-256 hash, with their agent and expiry. The agent's
 * latest key hash is kept too: issuing a new key retires the earlier ones.
 */
export async function putProvisioningKey(hash: string, agentUuid: string, expiresAt: number): Promise<void> {
  await documentClient().send(
    new PutCommand({
      TableName: tableName(),
      Item: { PK: `PROVKEY#${hash}`, SK: 'KEY', agentUuid, expiresAt, ttl: Math.ceil(expiresAt / 1000) },
    }),
  );
  await documentClient().send(
    new PutCommand({ TableName: tableName(), Item: { PK: `PROVKEYLATEST#${agentUuid}`, SK: 'KEY', hash } }),
  );
}

export async function latestProvisioningKeyHash(agentUuid: string): Promise<string | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({
      TableName: tableName(),
      Key: { PK: `PROVKEYLATEST#${agentUuid}`, SK: 'KEY' },
      ConsistentRead: true,
    }),
  );
  return Item?.hash as string | undefined;
}

/** Consumes a provisioning key: it is deleted by whoever presents it first, valid or expired. */
export async function takeProvisioningKey(
  hash: string,
): Promise<{ agentUuid: string; expiresAt: number } | undefined> {
  try {
    const { Attributes } = await documentClient().send(
      new DeleteCommand({
        TableName: tableName(),
        Key: { PK: `PROVKEY#${hash}`, SK: 'KEY' },
        ConditionExpression: 'attribute_exists(PK)',
        ReturnValues: 'ALL_OLD',
      }),
    );
    return Attributes
      ? { agentUuid: String(Attributes.agentUuid), expiresAt: Number(Attributes.expiresAt) }
      : undefined;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return undefined;
    throw error;
  }
}

/**
 * The agent's identity as it provisioned: its public key (SPKI PEM; the private half never reaches the
 * store) and the architecture it reported, which picks its microservices' images.
 */
export async function putAgentPublicKey(
  agentUuid: string,
  publicKeyPem: string,
  architecture: number,
): Promise<void> {
  await documentClient().send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        PK: `AGENTKEY#${agentUuid}`,
        SK: 'KEY',
        publicKeyPem,
        architecture,
        updatedAt: new Date().toISOString(),
      },
    }),
  );
}

/** The architecture the agent reported when it provisioned (undefined before that). */
export async function getProvisionedArchitecture(agentUuid: string): Promise<number | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({
      TableName: tableName(),
      Key: { PK: `AGENTKEY#${agentUuid}`, SK: 'KEY' },
      ConsistentRead: true,
    }),
  );
  return Item?.architecture as number | undefined;
}

export async function getAgentPublicKey(agentUuid: string): Promise<string | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({
      TableName: tableName(),
      Key: { PK: `AGENTKEY#${agentUuid}`, SK: 'KEY' },
      ConsistentRead: true,
    }),
  );
  return Item?.publicKeyPem as string | undefined;
}

export async function deleteAgentCredentials(agentUuid: string): Promise<void> {
  await documentClient().send(
    new DeleteCommand({ TableName: tableName(), Key: { PK: `AGENTKEY#${agentUuid}`, SK: 'KEY' } }),
  );
}

/** Records a token id; false when it was seen before (a replay). */
export async function recordTokenId(agentUuid: string, jti: string, expiresAt: number): Promise<boolean> {
  return conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: { PK: `JTI#${agentUuid}#${jti}`, SK: 'JTI', ttl: Math.ceil(expiresAt / 1000) + 60 },
      ConditionExpression: 'attribute_not_exists(PK)',
    }),
  );
}
