import { DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient, getItem, indexes, keys, tableName, withoutKeys } from './client.js';
import { queryIndex } from './query.js';

/** A container registry an Edgelet pulls images from (`registryId` of a microservice). */
export interface ImageRegistryRow {
  id: number;
  url: string;
  isPublic: boolean;
  username: string;
  password: string;
  userEmail: string;
  createdAt?: string;
}

/**
 * The registries every controller has, as the reference seeds them: id 1 the public Docker Hub, id 2
 * images already in the agent's cache. They are not stored and cannot be removed.
 */
export const BUILT_IN_REGISTRIES: readonly ImageRegistryRow[] = [
  { id: 1, url: 'registry.hub.docker.com', isPublic: true, username: '', password: '', userEmail: '' },
  { id: 2, url: 'from_cache', isPublic: true, username: '', password: '', userEmail: '' },
];

const listKey = (id: number) => String(id).padStart(10, '0');

export async function listImageRegistries(): Promise<ImageRegistryRow[]> {
  const stored = await queryIndex<Record<string, unknown>>(indexes.byKind, 'REGISTRY');
  return [...BUILT_IN_REGISTRIES, ...stored.map((item) => withoutKeys<ImageRegistryRow>(item)!)];
}

export async function getImageRegistry(id: number): Promise<ImageRegistryRow | undefined> {
  return BUILT_IN_REGISTRIES.find((registry) => registry.id === id) ?? getItem(keys.imageRegistry(id));
}

/** Stores a new registry under the next id (ids after the built-in ones; never reused). */
export async function putNewImageRegistry(registry: Omit<ImageRegistryRow, 'id'>): Promise<ImageRegistryRow> {
  const { Attributes } = await documentClient().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.imageRegistrySequence(),
      UpdateExpression: 'SET lastId = if_not_exists(lastId, :builtIn) + :one',
      ExpressionAttributeValues: { ':builtIn': BUILT_IN_REGISTRIES.length, ':one': 1 },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  const row: ImageRegistryRow = { ...registry, id: Number(Attributes?.lastId) };
  await documentClient().send(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.imageRegistry(row.id), ...row, GSI1PK: 'REGISTRY', GSI1SK: listKey(row.id) },
    }),
  );
  return row;
}

export async function deleteImageRegistry(id: number): Promise<void> {
  await documentClient().send(new DeleteCommand({ TableName: tableName(), Key: keys.imageRegistry(id) }));
}
