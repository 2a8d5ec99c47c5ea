import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  type DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  type UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { mapWithConcurrency } from '../concurrency.js';
import { config, currentContext, perContext } from '../context.js';
import { ConflictError } from '../errors.js';
import { measureCalls } from '../metrics/operations.js';
import { snapshotMiddleware } from './snapshot.js';

/**
 * The store's client: lib-dynamodb's commands (what every store module builds) sent through a plain
 * DynamoDB client that resolves its middleware once per kind of command (`cacheMiddleware`) instead of
 * on every call, as the document client must (it adds its marshalling to each command). Items are
 * marshalled by one middleware of that client, after the snapshot, the meters and the hooks (all of
 * them see items as the store modules wrote them) and before the request is serialized; which fields
 * hold items is said once per command in DOCUMENT_FIELDS. A stack changed after its first call (a test
 * that listens) is resolved again.
 */
export class StoreClient {
  constructor(private readonly dynamodb: DynamoDBClient) {}

  get middlewareStack(): DynamoDBClient['middlewareStack'] {
    // Whoever takes the stack may change it: the next call resolves it afresh.
    delete (this.dynamodb as unknown as { handlers?: unknown }).handlers;
    return this.dynamodb.middlewareStack;
  }

  /** Sends a command of lib-dynamodb, typed as the document client types it. */
  readonly send = ((command: object) => {
    const { clientCommand } = command as { clientCommand: Parameters<DynamoDBClient['send']>[0] };
    return this.dynamodb.send(clientCommand);
  }) as DynamoDBDocumentClient['send'];
}

type Fields = Record<string, unknown>;
type Convert = (record: Fields) => Fields;

interface ItemFields {
  input(input: Fields, to: Convert): void;
  output(output: Fields, to: Convert): void;
}

/** Fields that hold an item (or a list of items) in a command's input and in its output. */
const recordFields = (input: readonly string[], output: readonly string[]): ItemFields => ({
  input: (fields, to) => convert(fields, input, to),
  output: (fields, to) => convert(fields, output, to),
});

function convert(record: Fields, fields: readonly string[], to: Convert): void {
  for (const field of fields) {
    const value = record[field];
    if (value) record[field] = Array.isArray(value) ? value.map(to) : to(value as Fields);
  }
}

/** Where each command's items are, in and out; a batch's are under its tables. */
const DOCUMENT_FIELDS: Record<string, ItemFields> = {
  GetItemCommand: recordFields(['Key'], ['Item']),
  PutItemCommand: recordFields(['Item', 'ExpressionAttributeValues'], ['Attributes']),
  UpdateItemCommand: recordFields(['Key', 'ExpressionAttributeValues'], ['Attributes']),
  DeleteItemCommand: recordFields(['Key', 'ExpressionAttributeValues'], ['Attributes']),
  QueryCommand: recordFields(
    ['ExclusiveStartKey', 'ExpressionAttributeValues'],
    ['Items', 'LastEvaluatedKey'],
  ),
  ScanCommand: recordFields(
    ['ExclusiveStartKey', 'ExpressionAttributeValues'],
    ['Items', 'LastEvaluatedKey'],
  ),
  BatchGetItemCommand: {
    input: (input, to) => {
      input.RequestItems = keysOfTables(input.RequestItems, to);
    },
    output: (output, to) => {
      output.Responses = mapTables(output.Responses, (items) => (items as Fields[]).map(to));
      output.UnprocessedKeys = keysOfTables(output.UnprocessedKeys, to);
    },
  },
  BatchWriteItemCommand: {
    input: (input, to) => {
      input.RequestItems = writesOfTables(input.RequestItems, to);
    },
    output: (output, to) => {
      output.UnprocessedItems = writesOfTables(output.UnprocessedItems, to);
    },
  },
};

function mapTables(tables: unknown, each: (table: unknown) => unknown): Fields | undefined {
  if (!tables) return undefined;
  return Object.fromEntries(Object.entries(tables as Fields).map(([name, table]) => [name, each(table)]));
}

const keysOfTables = (tables: unknown, to: Convert) =>
  mapTables(tables, (table) => ({
    ...(table as Fields),
    Keys: ((table as Fields).Keys as Fields[]).map(to),
  }));

const writesOfTables = (tables: unknown, to: Convert) =>
  mapTables(tables, (writes) =>
    (writes as { PutRequest?: { Item: Fields }; DeleteRequest?: { Key: Fields } }[]).map((write) =>
      write.PutRequest
        ? { PutRequest: { Item: to(write.PutRequest.Item) } }
        : { DeleteRequest: { Key: to(write.DeleteRequest!.Key) } },
    ),
  );

const MARSHALL_OPTIONS = { removeUndefinedValues: true, convertClassInstanceToMap: false };
const toAttributeValues: Convert = (record) => marshall(record, MARSHALL_OPTIONS) as Fields;
const toItem: Convert = (record) => unmarshall(record as Parameters<typeof unmarshall>[0]);

/** The middleware that turns the store modules' items into attribute values and back. */
function documentMiddleware(
  next: (args: { input: object }) => Promise<{ output: object }>,
  context: { commandName?: string },
) {
  const fields = DOCUMENT_FIELDS[String(context.commandName)];
  if (!fields) throw new Error(`the store client has no item fields for ${context.commandName}`);
  return async (args: { input: object }) => {
    const input = { ...(args.input as Fields) };
    fields.input(input, toAttributeValues);
    const result = await next({ ...args, input });
    const output = { ...(result.output as Fields) };
    fields.output(output, toItem);
    return { ...result, output };
  };
}

/**
 * One store client per context. The endpoint and credentials come from the configuration: an
 * emulator's in the embedded runtime and the tests, AWS itself (default credential chain) in Lambda.
 */
export const documentClient = perContext(function dynamoDbClient(settings): StoreClient {
  const { hooks } = currentContext();
  const client = new DynamoDBClient({
    region: settings.region,
    maxAttempts: 5,
    cacheMiddleware: true,
    ...(settings.endpoints.dynamodb ? { endpoint: settings.endpoints.dynamodb } : {}),
    ...(settings.credentials ? { credentials: settings.credentials } : {}),
    ...hooks.clientOptions?.('dynamodb'),
  });
  // Reads a reconcile made up front are answered here (outermost: not sent, so not measured).
  client.middlewareStack.add(snapshotMiddleware as never, {
    step: 'initialize',
    name: 'fogbridgeReadSnapshot',
    priority: 'high',
  });
  // Innermost of its step: everything above sees items as the store modules wrote them.
  client.middlewareStack.add(documentMiddleware as never, {
    step: 'initialize',
    name: 'fogbridgeDocumentItems',
    priority: 'low',
  });
  measureCalls(client, 'dynamodb');
  hooks.clientBuilt?.('dynamodb', client);
  return new StoreClient(client);
});

export function tableName(): string {
  return config().tableName;
}

export function isConditionalCheckFailed(error: unknown): boolean {
  return (error as { name?: string } | null)?.name === 'ConditionalCheckFailedException';
}

/**
 * Sends a conditional write; false when its condition failed (another writer got there first, or the
 * item is not in the state the write expects). Any other error propagates.
 */
export async function conditionalWrite(
  command: PutCommand | UpdateCommand | DeleteCommand,
): Promise<boolean> {
  try {
    // One of the three write commands; the client's overloads take each on its own, not their union.
    await documentClient().send(command as PutCommand);
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}

/** Writes an item that must not exist yet; a ConflictError saying `conflict` when it does. */
export async function putNewItem(item: Record<string, unknown>, conflict: string): Promise<void> {
  const written = await conditionalWrite(
    new PutCommand({ TableName: tableName(), Item: item, ConditionExpression: 'attribute_not_exists(PK)' }),
  );
  if (!written) throw new ConflictError(conflict);
}

/**
 * Many items by key, read consistently in batches of 100 (BatchGetItem's limit), following unprocessed
 * keys; returned by the index of their key (missing items are absent).
 */
export async function batchGetItems<T>(
  itemKeys: readonly { PK: string; SK: string }[],
): Promise<Map<number, T>> {
  const found = new Map<number, T>();
  const indexOf = new Map(itemKeys.map((key, index) => [`${key.PK}\u0000${key.SK}`, index]));
  const chunks: (typeof itemKeys)[] = [];
  for (let i = 0; i < itemKeys.length; i += 100) chunks.push(itemKeys.slice(i, i + 100));
  // BatchGetItem takes 100 keys a call: several calls in flight at once.
  await mapWithConcurrency(chunks, 8, async (chunk) => {
    let request: Record<string, { Keys: { PK: string; SK: string }[]; ConsistentRead: boolean }> | undefined =
      { [tableName()]: { Keys: [...chunk], ConsistentRead: true } };
    while (request && Object.keys(request).length > 0) {
      const result = await documentClient().send(new BatchGetCommand({ RequestItems: request }));
      for (const item of result.Responses?.[tableName()] ?? []) {
        const index = indexOf.get(`${item.PK}\u0000${item.SK}`);
        if (index !== undefined) found.set(index, withoutKeys<T>(item)!);
      }
      request = result.UnprocessedKeys as typeof request;
    }
  });
  return found;
}

/**
 * Puts and deletes many items, 25 a call (BatchWriteItem's limit) with up to eight calls in flight,
 * following unprocessed items. Unconditional: callers use it where the items are owned by one writer at a
 * time and a version item elsewhere guards the whole.
 */
export async function batchWriteItems(
  puts: readonly Record<string, unknown>[],
  deletes: readonly { PK: string; SK: string }[],
): Promise<void> {
  const requests = [
    ...puts.map((Item) => ({ PutRequest: { Item } })),
    ...deletes.map((Key) => ({ DeleteRequest: { Key } })),
  ];
  const chunks: (typeof requests)[] = [];
  for (let i = 0; i < requests.length; i += 25) chunks.push(requests.slice(i, i + 25));
  const send = async (chunk: typeof requests) => {
    let pending: Record<string, typeof requests> | undefined = { [tableName()]: chunk };
    while (pending && Object.keys(pending).length > 0) {
      const result = await documentClient().send(new BatchWriteCommand({ RequestItems: pending }));
      pending = result.UnprocessedItems as typeof pending;
    }
  };
  for (let i = 0; i < chunks.length; i += 8) await Promise.all(chunks.slice(i, i + 8).map(send));
}

/** One item by its key, read consistently, without its key and index attributes. */
export async function getItem<T>(key: { PK: string; SK: string }): Promise<T | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }),
  );
  return withoutKeys<T>(Item);
}

/**
 * Where each rotating check of the sweeper stopped: router configs, distribution sets, port claims, the
 * hub's entries, issued certificates, application accounts.
 */
export type SweepCursor = 'routers' | 'services' | 'ports' | 'hub' | 'certificates' | 'accounts';

/** Item keys. One table: a partition key and a sort key, plus four overloaded GSIs. */
export const keys = {
  service: (name: string) => ({ PK: `SVC#${name}`, SK: 'SVC' }),
  serviceToken: (token: string, name: string) => ({ PK: `TOKEN#${token}`, SK: `SVC#${name}` }),
  agent: (uuid: string) => ({ PK: `AGENT#${uuid}`, SK: 'AGENT' }),
  agentName: (name: string) => ({ PK: `AGENTNAME#${name}`, SK: 'NAME' }),
  agentCertificateName: (token: string) => ({ PK: `AGENTCERTNAME#${token}`, SK: 'NAME' }),
  agentToken: (token: string, uuid: string) => ({ PK: `AGTOKEN#${token}`, SK: `AGENT#${uuid}` }),
  application: (name: string) => ({ PK: `APP#${name}`, SK: 'APP' }),
  microservice: (uuid: string) => ({ PK: `MS#${uuid}`, SK: 'MS' }),
  microserviceName: (application: string, name: string) => ({
    PK: `MSNAME#${application}/${name}`,
    SK: 'NAME',
  }),
  routerConfig: (routerKey: string) => ({ PK: `ROUTERCFG#${routerKey}`, SK: 'CFG' }),
  /** One managed bridge entry of a router, in the router's partition beside its base config. */
  routerEntry: (routerKey: string, map: 'tcpListeners' | 'tcpConnectors', name: string) => ({
    PK: `ROUTERCFG#${routerKey}`,
    SK: `ENTRY#${map}#${name}`,
  }),
  defaultRouter: () => ({ PK: 'DEFAULTROUTER', SK: 'ROUTER' }),
  routerRequests: (routerKey: string) => ({ PK: `ROUTERREQ#${routerKey}`, SK: 'REQ' }),
  // An agent's change flags live on its router's request record: the fog worker raises them in the same
  // write that marks its requests completed.
  changes: (agentUuid: string) => ({ PK: `ROUTERREQ#${agentUuid}`, SK: 'REQ' }),
  portClaim: (port: number) => ({ PK: 'PORTS', SK: `PORT#${String(port).padStart(5, '0')}` }),
  lock: (name: string) => ({ PK: `LOCK#${name}`, SK: 'LOCK' }),
  imageRegistry: (id: number) => ({ PK: `REGISTRY#${id}`, SK: 'REGISTRY' }),
  imageRegistrySequence: () => ({ PK: 'REGISTRYSEQ', SK: 'SEQ' }),
  agentStatus: (agentUuid: string) => ({ PK: `AGENTSTATUS#${agentUuid}`, SK: 'STATUS' }),
  agentConfig: (agentUuid: string) => ({ PK: `AGENTCONFIG#${agentUuid}`, SK: 'CONFIG' }),
  applied: (owner: string) => ({ PK: `APPLIED#${owner}`, SK: 'APPLIED' }),
  certificate: (name: string) => ({ PK: `CERT#${name}`, SK: 'CERT' }),
  systemMicroservice: (agentUuid: string, name: string) => ({ PK: `SYSMS#${agentUuid}`, SK: name }),
  driftCursor: (check: SweepCursor = 'routers') => ({
    PK: 'SWEEP',
    SK: {
      routers: 'DRIFTCURSOR',
      services: 'SETCURSOR',
      ports: 'PORTCURSOR',
      hub: 'HUBCURSOR',
      certificates: 'CERTCURSOR',
      accounts: 'ACCOUNTCURSOR',
    }[check],
  }),
  natsHub: () => ({ PK: 'NATSHUB', SK: 'HUB' }),
  natsOperator: () => ({ PK: 'NATSOPERATOR', SK: 'OPERATOR' }),
  natsAccount: (name: string) => ({ PK: `NATSACCOUNT#${name}`, SK: 'ACCOUNT' }),
  natsUser: (account: string, user: string) => ({ PK: `NATSUSER#${account}#${user}`, SK: 'USER' }),
  mount: (name: string) => ({ PK: `MOUNT#${name}`, SK: 'MOUNT' }),
  natsHubRestart: () => ({ PK: 'NATSHUB', SK: 'RESTART' }),
  natsServer: (agentUuid: string) => ({ PK: 'NATSSERVERS', SK: agentUuid }),
  natsInstance: (agentUuid: string) => ({ PK: `NATSINSTANCE#${agentUuid}`, SK: 'INSTANCE' }),
  /** A NATS account or user rule (listed through GSI1 `NATSRULE#<kind>`). */
  natsRule: (kind: 'account' | 'user', name: string) => ({ PK: `NATSRULE#${kind}#${name}`, SK: 'RULE' }),
  /** Application accounts: one partition, by application (a server's JWT directory reads it whole). */
  applicationAccount: (application: string) => ({ PK: 'NATSACCOUNTS', SK: application }),
  /** The users of an application's account: a partition per account. */
  applicationUser: (application: string, name: string) => ({ PK: `NATSUSERS#${application}`, SK: name }),
  natsSequence: () => ({ PK: 'NATSSEQ', SK: 'SEQ' }),
  /** A dialling router whose rebuild waits for the agent it dials (one partition, by upstream). */
  rolloutHold: (upstream: string, dialer: string) => ({ PK: 'ROLLOUTHOLDS', SK: `${upstream}#${dialer}` }),
  natsBundleVersion: () => ({ PK: 'NATSBUNDLE', SK: 'VERSION' }),
};

/** Index names and what they serve. */
export const indexes = {
  /** GSI1: every item of one kind, sorted by name (service list, agent list, microservice list). */
  byKind: 'GSI1',
  /** GSI2: services by the hub router that owns their listener (`HUB#<defaultBridge>`). */
  byHub: 'GSI2',
  /** GSI3: services by the router that holds their connector; microservices by agent. */
  bySite: 'GSI3',
  /** GSI4: sparse; rows whose generation is ahead of what reconcile observed. */
  pending: 'GSI4',
} as const;

/** A stored item without its key and index attributes. */
export function withoutKeys<T>(item: Record<string, unknown> | undefined): T | undefined {
  if (!item) return undefined;
  const row: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(item)) {
    if (key === 'PK' || key === 'SK' || /^GSI\dP?S?K$/.test(key)) continue;
    row[key] = value;
  }
  return row as T;
}
