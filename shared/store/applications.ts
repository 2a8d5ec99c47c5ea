import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import {
  conditionalWrite,
  documentClient,
  indexes,
  keys,
  putNewItem,
  tableName,
  withoutKeys,
} from './client.js';
import { queryIndex, queryIndexPrefix } from './query.js';
import { unchangedReferences } from './references.js';

export interface ApplicationRow {
  name: string;
  description?: string;
  /** potctl starts and stops an application; stored as the reference does (no effect on routing). */
  isActivated?: boolean;
  /** Whether the application has a NATS account, and the account rule it is signed with (default when absent). */
  natsAccess?: boolean;
  natsRule?: string;
  createdAt: string;
  updatedAt?: string;
}

export interface MicroserviceImage {
  containerImage: string;
  /** The agent architecture this image is for (1 amd64, 2 arm64, 3 riscv64, 4 arm). */
  fogTypeId: number;
}

export interface MicroserviceRow {
  uuid: string;
  name: string;
  application: string;
  agentUuid: string;
  hostNetworkMode: boolean;
  /** One image per architecture; rows written before images were kept have none. */
  images?: MicroserviceImage[];
  /** The container registry of the images (1: Docker Hub). */
  registryId?: number;
  /** The JSON string the Edgelet hands the container. */
  config?: string;
  /** Whether it gets a user (and creds) in its application's NATS account, and that user's rule. */
  natsAccess?: boolean;
  natsRule?: string;
  createdAt: string;
  updatedAt: string;
  version: number;
  /** Changed by every new reference to it (a service it backs); a removal conditions on it. */
  refToken?: string;
}

export async function getApplication(name: string): Promise<ApplicationRow | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({ TableName: tableName(), Key: keys.application(name), ConsistentRead: true }),
  );
  return withoutKeys<ApplicationRow>(Item);
}

export async function putNewApplication(row: ApplicationRow): Promise<void> {
  await putNewItem(
    { ...keys.application(row.name), ...row, GSI1PK: 'APP', GSI1SK: row.name },
    `Application with name ${row.name} already exists`,
  );
}

/** Replaces an application's row (description, activation); its name never changes. */
export async function putApplication(row: ApplicationRow): Promise<void> {
  await documentClient().send(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.application(row.name), ...row, GSI1PK: 'APP', GSI1SK: row.name },
    }),
  );
}

export async function deleteApplicationRow(name: string): Promise<void> {
  await documentClient().send(new DeleteCommand({ TableName: tableName(), Key: keys.application(name) }));
}

export async function listApplications(): Promise<ApplicationRow[]> {
  const items = await queryIndex<Record<string, unknown>>(indexes.byKind, 'APP');
  return items.map((item) => withoutKeys<ApplicationRow>(item)!);
}

function microserviceIndexes(row: MicroserviceRow) {
  return {
    GSI1PK: 'MS',
    GSI1SK: `${row.application}/${row.name}`,
    GSI3PK: `MSAGENT#${row.agentUuid}`,
    GSI3SK: row.uuid,
  };
}

export async function getMicroservice(uuid: string): Promise<MicroserviceRow | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({ TableName: tableName(), Key: keys.microservice(uuid), ConsistentRead: true }),
  );
  return withoutKeys<MicroserviceRow>(Item);
}

export async function getMicroserviceUuidByName(
  application: string,
  name: string,
): Promise<string | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({
      TableName: tableName(),
      Key: keys.microserviceName(application, name),
      ConsistentRead: true,
    }),
  );
  return Item?.uuid as string | undefined;
}

export async function listMicroservices(): Promise<MicroserviceRow[]> {
  const items = await queryIndex<Record<string, unknown>>(indexes.byKind, 'MS');
  return items.map((item) => withoutKeys<MicroserviceRow>(item)!);
}

/** The microservices of one application, by name. */
export async function listMicroservicesOfApplication(application: string): Promise<MicroserviceRow[]> {
  const items = await queryIndexPrefix<Record<string, unknown>>(indexes.byKind, 'MS', `${application}/`);
  return items
    .map((item) => withoutKeys<MicroserviceRow>(item)!)
    .filter((row) => row.application === application);
}

export async function listMicroservicesByAgent(agentUuid: string): Promise<MicroserviceRow[]> {
  const items = await queryIndex<Record<string, unknown>>(indexes.bySite, `MSAGENT#${agentUuid}`);
  return items
    .map((item) => withoutKeys<MicroserviceRow>(item)!)
    .filter((row) => row.agentUuid === agentUuid);
}

export async function putNewMicroservice(row: MicroserviceRow): Promise<void> {
  const nameKey = keys.microserviceName(row.application, row.name);
  await putNewItem(
    { ...nameKey, uuid: row.uuid },
    `Microservice with name ${row.name} already exists in application ${row.application}`,
  );
  try {
    await putNewItem(
      { ...keys.microservice(row.uuid), ...row, ...microserviceIndexes(row) },
      `Microservice with uuid ${row.uuid} already exists`,
    );
  } catch (error) {
    // The name goes back: nothing is half-written.
    await documentClient().send(new DeleteCommand({ TableName: tableName(), Key: nameKey }));
    throw error;
  }
}

/** Moves or edits a microservice written at `previous.version`; false when another writer won. */
export async function replaceMicroservice(
  next: MicroserviceRow,
  previous: MicroserviceRow,
): Promise<boolean> {
  return conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: {
        ...keys.microservice(next.uuid),
        ...next,
        version: previous.version + 1,
        ...microserviceIndexes(next),
      },
      ConditionExpression: '#v = :v',
      ExpressionAttributeNames: { '#v': 'version' },
      ExpressionAttributeValues: { ':v': previous.version },
    }),
  );
}

/**
 * Deletes a microservice as it was read: false when it changed or a service started to reference it
 * since (see store/references.ts); the caller reads it again and checks again.
 */
export async function deleteMicroservice(row: MicroserviceRow): Promise<boolean> {
  const references = unchangedReferences(row.refToken);
  const deleted = await conditionalWrite(
    new DeleteCommand({
      TableName: tableName(),
      Key: keys.microservice(row.uuid),
      ConditionExpression: `#v = :v AND ${references.expression}`,
      ExpressionAttributeNames: { '#v': 'version' },
      ExpressionAttributeValues: { ':v': row.version, ...references.values },
    }),
  );
  if (!deleted) return false;
  await documentClient().send(
    new DeleteCommand({ TableName: tableName(), Key: keys.microserviceName(row.application, row.name) }),
  );
  return true;
}
