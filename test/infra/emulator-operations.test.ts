import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BatchGetItemCommand,
  BatchWriteItemCommand,
  ConditionalCheckFailedException,
  CreateTableCommand,
  DeleteItemCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  ResourceNotFoundException,
  ScanCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  ChangeMessageVisibilityBatchCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  QueueDoesNotExist,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { placeholderSigner } from '../../infra/local/client-hooks.js';
import { MessagePortRequestHandler } from '../../infra/local/emulator-transport.js';
import { type EmulatorsThread, startEmulatorsThread } from '../../infra/local/emulators-thread.js';
import { answerOperationsAsJson } from '../../infra/local/json-operations.js';

/**
 * The embedded runtime sends its item and message operations to dynalite and fauxqs as JSON over a
 * message port, skipping the SDK's request building. Whatever the handlers above see must be what the
 * SDK's whole path over HTTP gives for the same call to the same emulator: outputs (binary values,
 * sets, numbers, nested maps) and errors (class, name, message, fault).
 */
const REGION = 'us-east-1';
const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };

let dataDir: string;
let emulators: EmulatorsThread;
let sdkStore: DynamoDBClient;
let jsonStore: DynamoDBClient;
let sdkQueues: SQSClient;
let jsonQueues: SQSClient;

beforeAll(async () => {
  // Prepare: both emulators; per service one client over HTTP, one as the embedded runtime builds it
  dataDir = mkdtempSync(join(tmpdir(), 'fogbridge-emulators-'));
  emulators = await startEmulatorsThread(join(dataDir, 'dynamodb'), REGION);
  sdkStore = new DynamoDBClient({ region: REGION, endpoint: emulators.dynamodbEndpoint, credentials });
  jsonStore = new DynamoDBClient({
    region: REGION,
    endpoint: emulators.dynamodbEndpoint,
    credentials,
    signer: placeholderSigner(REGION, 'dynamodb'),
    requestHandler: new MessagePortRequestHandler(emulators.connectDynamodb()),
  });
  answerOperationsAsJson(jsonStore, 'dynamodb');
  sdkQueues = new SQSClient({
    region: REGION,
    endpoint: emulators.sqsEndpoint,
    credentials,
    useQueueUrlAsEndpoint: false,
  });
  jsonQueues = new SQSClient({
    region: REGION,
    endpoint: emulators.sqsEndpoint,
    credentials,
    useQueueUrlAsEndpoint: false,
    signer: placeholderSigner(REGION, 'sqs'),
    requestHandler: new MessagePortRequestHandler(emulators.connectSqs()),
  });
  answerOperationsAsJson(jsonQueues, 'sqs');
  for (const table of ['over-http', 'as-json']) {
    await sdkStore.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          { AttributeName: 'PK', AttributeType: 'S' },
          { AttributeName: 'SK', AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: 'PK', KeyType: 'HASH' },
          { AttributeName: 'SK', KeyType: 'RANGE' },
        ],
      }),
    );
  }
});

afterAll(async () => {
  for (const client of [sdkStore, jsonStore, sdkQueues, jsonQueues]) client?.destroy();
  await emulators?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The same call through both clients, each against a table of its own. */
async function bothWays<T>(call: (client: DynamoDBClient, table: string) => Promise<T>): Promise<[T, T]> {
  return [await call(sdkStore, 'over-http'), await call(jsonStore, 'as-json')];
}

/**
 * An output without what differs by nature between the two calls: the request id, and the table's
 * name wherever the output names it (bytes are kept as bytes: `B: <bytes 00 01>`).
 */
const comparable = (output: object) => {
  const { $metadata, ...rest } = output as { $metadata: { httpStatusCode?: number } };
  const text = JSON.stringify({ status: $metadata.httpStatusCode, ...rest }, function (key, value) {
    const raw = (this as Record<string, unknown>)[key];
    return raw instanceof Uint8Array ? `<bytes ${Buffer.from(raw).toString('hex')}>` : value;
  });
  return JSON.parse(text.replaceAll('"as-json"', '"over-http"'));
};

async function failure(call: () => Promise<unknown>) {
  const error = (await call().then(
    () => undefined,
    (thrown: unknown) => thrown,
  )) as (Error & { $fault?: string; $metadata?: { httpStatusCode?: number } }) | undefined;
  expect(error).toBeInstanceOf(Error);
  return {
    error: error!,
    seen: {
      name: error!.name,
      message: error!.message,
      fault: error!.$fault,
      status: error!.$metadata?.httpStatusCode,
    },
  };
}

const ITEM = {
  PK: { S: 'service#a' },
  SK: { S: 'ROW' },
  port: { N: '10001' },
  ratio: { N: '0.25' },
  key: { B: new Uint8Array([0, 1, 2, 250, 255]) },
  keys: { BS: [new Uint8Array([1]), new Uint8Array([2, 3])] },
  tags: { SS: ['edge', 'fleet'] },
  ports: { NS: ['5671', '45671'] },
  spec: {
    M: { name: { S: 'a "quoted" name ✓' }, list: { L: [{ N: '1' }, { BOOL: true }, { NULL: true }] } },
  },
};

describe('the store answers the embedded runtime as the SDK over HTTP does', () => {
  it('writes and reads items with every kind of value', async () => {
    // Act
    const puts = await bothWays((client, TableName) =>
      client.send(new PutItemCommand({ TableName, Item: ITEM, ReturnConsumedCapacity: 'TOTAL' })),
    );
    const gets = await bothWays((client, TableName) =>
      client.send(new GetItemCommand({ TableName, Key: { PK: ITEM.PK, SK: ITEM.SK }, ConsistentRead: true })),
    );
    const updates = await bothWays((client, TableName) =>
      client.send(
        new UpdateItemCommand({
          TableName,
          Key: { PK: ITEM.PK, SK: ITEM.SK },
          UpdateExpression: 'SET port = port + :one ADD tags :tag',
          ExpressionAttributeValues: { ':one': { N: '1' }, ':tag': { SS: ['new'] } },
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );

    // Assess
    expect(comparable(puts[1])).toEqual(comparable(puts[0]));
    expect(puts[1].ConsumedCapacity?.CapacityUnits).toBeGreaterThan(0);
    expect(comparable(gets[1])).toEqual(comparable(gets[0]));
    expect(gets[1].Item?.key?.B).toEqual(new Uint8Array([0, 1, 2, 250, 255]));
    expect(gets[1].Item?.keys?.BS).toEqual([new Uint8Array([1]), new Uint8Array([2, 3])]);
    expect(gets[1].Item?.spec).toEqual(ITEM.spec);
    expect(comparable(updates[1])).toEqual(comparable(updates[0]));
    expect(updates[1].Attributes?.port).toEqual({ N: '10002' });
  });

  it('queries, scans, batches and deletes', async () => {
    // Prepare
    await bothWays((client, TableName) =>
      client.send(
        new BatchWriteItemCommand({
          RequestItems: {
            [TableName]: ['b', 'c', 'd'].map((name) => ({
              PutRequest: { Item: { PK: { S: 'PORTS' }, SK: { S: name }, blob: { B: Buffer.from(name) } } },
            })),
          },
        }),
      ),
    );

    // Act
    const queries = await bothWays((client, TableName) =>
      client.send(
        new QueryCommand({
          TableName,
          KeyConditionExpression: 'PK = :pk',
          ExpressionAttributeValues: { ':pk': { S: 'PORTS' } },
          Limit: 2,
        }),
      ),
    );
    const scans = await bothWays((client, TableName) => client.send(new ScanCommand({ TableName })));
    const batchGets = await bothWays((client, TableName) =>
      client.send(
        new BatchGetItemCommand({
          RequestItems: { [TableName]: { Keys: [{ PK: { S: 'PORTS' }, SK: { S: 'c' } }] } },
        }),
      ),
    );
    const deletes = await bothWays((client, TableName) =>
      client.send(
        new DeleteItemCommand({
          TableName,
          Key: { PK: { S: 'PORTS' }, SK: { S: 'b' } },
          ReturnValues: 'ALL_OLD',
        }),
      ),
    );

    // Assess
    expect(comparable(queries[1])).toEqual(comparable(queries[0]));
    expect(queries[1].Items).toHaveLength(2);
    expect(queries[1].LastEvaluatedKey).toEqual({ PK: { S: 'PORTS' }, SK: { S: 'c' } });
    expect(scans[1].Items).toEqual(scans[0].Items);
    expect(scans[1].Count).toBe(scans[0].Count);
    expect(batchGets[1].Responses?.['as-json']).toEqual(batchGets[0].Responses?.['over-http']);
    expect(batchGets[1].Responses?.['as-json']?.[0]?.blob?.B).toEqual(new Uint8Array(Buffer.from('c')));
    expect(comparable(deletes[1])).toEqual(comparable(deletes[0]));
    expect(deletes[1].Attributes?.SK).toEqual({ S: 'b' });
  });

  it('throws the error the SDK throws: a failed condition, a bad expression, a missing table', async () => {
    // Act
    const conditions = await bothWays((client, TableName) =>
      failure(() =>
        client.send(
          new PutItemCommand({ TableName, Item: ITEM, ConditionExpression: 'attribute_not_exists(PK)' }),
        ),
      ),
    );
    const expressions = await bothWays((client, TableName) =>
      failure(() =>
        client.send(
          new UpdateItemCommand({
            TableName,
            Key: { PK: ITEM.PK, SK: ITEM.SK },
            UpdateExpression: 'SET = 1',
          }),
        ),
      ),
    );
    const tables = await bothWays((client) =>
      failure(() =>
        client.send(new GetItemCommand({ TableName: 'no-such-table', Key: { PK: ITEM.PK, SK: ITEM.SK } })),
      ),
    );

    // Assess
    expect(conditions[1].seen).toEqual(conditions[0].seen);
    expect(conditions[1].seen).toMatchObject({
      name: 'ConditionalCheckFailedException',
      fault: 'client',
      status: 400,
    });
    expect(conditions[1].error).toBeInstanceOf(ConditionalCheckFailedException);
    expect(expressions[1].seen).toEqual(expressions[0].seen);
    expect(expressions[1].seen.name).toBe('ValidationException');
    expect(expressions[1].seen.message).toContain('Invalid UpdateExpression');
    expect(tables[1].seen).toEqual(tables[0].seen);
    expect(tables[1].error).toBeInstanceOf(ResourceNotFoundException);
  });
});

describe('what the embedded runtime skips', () => {
  it('sends item and message operations without building an HTTP request; other operations build one', async () => {
    // Prepare: transports that refuse every HTTP request the SDK builds
    class NoHttp extends MessagePortRequestHandler {
      override handle(): never {
        throw new Error('an HTTP request was built');
      }
    }
    const store = new DynamoDBClient({
      region: REGION,
      endpoint: emulators.dynamodbEndpoint,
      credentials,
      requestHandler: new NoHttp(emulators.connectDynamodb()),
    });
    answerOperationsAsJson(store, 'dynamodb');
    const queues = new SQSClient({
      region: REGION,
      endpoint: emulators.sqsEndpoint,
      credentials,
      useQueueUrlAsEndpoint: false,
      requestHandler: new NoHttp(emulators.connectSqs()),
    });
    answerOperationsAsJson(queues, 'sqs');
    const QueueUrl = (await sdkQueues.send(new CreateQueueCommand({ QueueName: 'plain' }))).QueueUrl!;

    // Act
    const got = await store.send(
      new GetItemCommand({ TableName: 'as-json', Key: { PK: ITEM.PK, SK: ITEM.SK } }),
    );
    const sent = await queues.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x' }));
    const created = await failure(() => queues.send(new CreateQueueCommand({ QueueName: 'other' })));

    // Assess
    expect(got.Item?.PK).toEqual(ITEM.PK);
    expect(sent.MessageId).toMatch(/\S/);
    expect(created.seen.message).toBe('an HTTP request was built');
    store.destroy();
    queues.destroy();
  });
});

describe('the queues answer the embedded runtime as the SDK over HTTP does', () => {
  const createQueue = async (QueueName: string) =>
    (
      await sdkQueues.send(
        new CreateQueueCommand({
          QueueName,
          Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'false', VisibilityTimeout: '30' },
        }),
      )
    ).QueueUrl!;

  it('sends, receives, hides and deletes messages with their attributes', async () => {
    // Prepare
    const QueueUrl = await createQueue('reconcile.fifo');
    const attributes = {
      cause: { DataType: 'String', StringValue: 'create' },
      digest: { DataType: 'Binary', BinaryValue: new Uint8Array([9, 8, 7]) },
    };

    // Act
    const sent = await jsonQueues.send(
      new SendMessageCommand({
        QueueUrl,
        MessageBody: '{"name":"a","generation":1}',
        MessageGroupId: 'a',
        MessageDeduplicationId: 'a-1',
        MessageAttributes: attributes,
      }),
    );
    const batch = await jsonQueues.send(
      new SendMessageBatchCommand({
        QueueUrl,
        Entries: [
          { Id: '0', MessageBody: '{"name":"b"}', MessageGroupId: 'b', MessageDeduplicationId: 'b-1' },
        ],
      }),
    );
    const received = await jsonQueues.send(
      new ReceiveMessageCommand({
        QueueUrl,
        MaxNumberOfMessages: 10,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['MessageGroupId'],
      }),
    );
    const messages = received.Messages ?? [];
    const hidden = await jsonQueues.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl,
        Entries: messages.map((message, index) => ({
          Id: String(index),
          ReceiptHandle: message.ReceiptHandle!,
          VisibilityTimeout: 0,
        })),
      }),
    );
    const again = await sdkQueues.send(
      new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, MessageAttributeNames: ['All'] }),
    );
    const deleted = await jsonQueues.send(
      new DeleteMessageBatchCommand({
        QueueUrl,
        Entries: (again.Messages ?? []).map((message, index) => ({
          Id: String(index),
          ReceiptHandle: message.ReceiptHandle!,
        })),
      }),
    );

    // Assess
    expect(sent.MessageId).toMatch(/\S/);
    expect(sent.MD5OfMessageBody).toHaveLength(32);
    expect(batch.Successful?.map((entry) => entry.Id)).toEqual(['0']);
    expect(messages.map((message) => message.Body)).toEqual(['{"name":"a","generation":1}', '{"name":"b"}']);
    expect(messages[0]?.MessageAttributes).toEqual(attributes);
    expect(messages[0]?.Attributes?.MessageGroupId).toBe('a');
    expect(hidden.Successful).toHaveLength(2);
    expect(again.Messages?.map((message) => message.MessageAttributes)).toEqual(
      messages.map((message) => message.MessageAttributes),
    );
    expect(deleted.Successful).toHaveLength(2);
    expect(deleted.Failed ?? []).toEqual([]);
  });

  it('throws the error the SDK throws for a queue that does not exist', async () => {
    // Prepare
    const QueueUrl = `${emulators.sqsEndpoint}/000000000000/missing.fifo`;
    const send = (client: SQSClient) => () =>
      client.send(
        new SendMessageCommand({
          QueueUrl,
          MessageBody: 'x',
          MessageGroupId: 'x',
          MessageDeduplicationId: 'x',
        }),
      );

    // Act
    const overHttp = await failure(send(sdkQueues));
    const asJson = await failure(send(jsonQueues));

    // Assess
    expect(asJson.seen).toEqual(overHttp.seen);
    expect(asJson.error).toBeInstanceOf(QueueDoesNotExist);
  });
});
