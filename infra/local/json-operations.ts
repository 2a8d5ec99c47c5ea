import * as dynamodb from '@aws-sdk/client-dynamodb';
import * as sqs from '@aws-sdk/client-sqs';
import { type EmulatorAnswer, MessagePortRequestHandler } from './emulator-transport.js';

/** What one service's JSON protocol needs to answer its operations without the SDK's request. */
interface JsonProtocol {
  /** The target's prefix: `DynamoDB_20120810.GetItem`. */
  prefix: string;
  operations: ReadonlySet<string>;
  /** The service's exceptions by name, and the one a name it does not export is made as. */
  exceptions: Record<string, unknown>;
  base: new (options: never) => Error;
  /** Turns the answer's base64 blobs back into bytes (the SDK's deserializer does it from the schema). */
  reviveBlobs: (key: string, value: unknown) => unknown;
}

const DYNAMODB: JsonProtocol = {
  prefix: 'DynamoDB_20120810.',
  operations: new Set([
    'GetItem',
    'PutItem',
    'UpdateItem',
    'DeleteItem',
    'Query',
    'Scan',
    'BatchGetItem',
    'BatchWriteItem',
  ]),
  exceptions: dynamodb,
  base: dynamodb.DynamoDBServiceException,
  // An attribute value is an object of one type key: `{ B: "<base64>" }`, `{ BS: [...] }`.
  reviveBlobs: (_key, value) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
    const { B, BS } = value as { B?: unknown; BS?: unknown };
    if (typeof B === 'string' && Object.keys(value).length === 1) return { B: fromBase64(B) };
    if (Array.isArray(BS) && Object.keys(value).length === 1)
      return { BS: BS.map((b) => fromBase64(String(b))) };
    return value;
  },
};

const SQS: JsonProtocol = {
  prefix: 'AmazonSQS.',
  operations: new Set([
    'SendMessage',
    'SendMessageBatch',
    'ReceiveMessage',
    'DeleteMessage',
    'DeleteMessageBatch',
    'ChangeMessageVisibility',
    'ChangeMessageVisibilityBatch',
  ]),
  exceptions: sqs,
  base: sqs.SQSServiceException,
  // A message attribute's value: `{ DataType, BinaryValue: "<base64>" }`, `BinaryListValues: [...]`.
  reviveBlobs: (key, value) => {
    if (key === 'BinaryValue' && typeof value === 'string') return fromBase64(value);
    if (key === 'BinaryListValues' && Array.isArray(value)) return value.map((b) => fromBase64(String(b)));
    return value;
  },
};

const PROTOCOLS = { dynamodb: DYNAMODB, sqs: SQS };

interface Client {
  config: { requestHandler?: unknown };
  middlewareStack: {
    add(
      middleware: (next: Handler, context: { commandName?: string }) => Handler,
      options: { step: 'serialize'; priority: 'high'; name: string },
    ): void;
  };
}
type Handler = (args: { input: object }) => Promise<{ output: object; response?: unknown }>;

/**
 * The embedded runtime's store and queue calls as the JSON protocol puts them on the wire: the input
 * (items already marshalled to attribute values) is the body, the operation's name is the target, and
 * the emulator's JSON answer is the output. A middleware at the head of the serialize step answers the
 * operations PROTOCOLS names this way, so what the SDK does per call to reach a remote endpoint is
 * skipped there: endpoint resolution (which copies the client's configuration), the schema-driven
 * serializer and deserializer, retries and signing (the emulator's thread adds the headers every
 * request carries).
 * Everything in the initialize step still runs as in AWS: the document marshalling, the read snapshot,
 * the meters and the latency model. Other operations (tables, queues) take the SDK's whole path; in
 * Lambda every call does (tested against moto in test/aws).
 *
 * Answers `client`'s item or message operations so, when its transport is an emulator's message port
 * (a client with another transport is left as it is).
 */
export function answerOperationsAsJson(client: unknown, service: keyof typeof PROTOCOLS): void {
  const transport = (client as Client).config.requestHandler;
  if (!(transport instanceof MessagePortRequestHandler)) return;
  const protocol = PROTOCOLS[service];
  (client as Client).middlewareStack.add(
    (next, context) => {
      const operation = String(context.commandName).replace(/Command$/, '');
      if (!protocol.operations.has(operation)) return next;
      const target = protocol.prefix + operation;
      return async ({ input }) => {
        const answer = await transport.operation(target, toJson(input));
        return { output: outputOf(answer, protocol), response: undefined };
      };
    },
    { step: 'serialize', priority: 'high', name: 'fogbridgeJsonOperations' },
  );
}

/** The body of a request: bytes are written as base64, as the JSON protocol writes blobs. */
function toJson(input: object): string {
  return JSON.stringify(input, function (this: Record<string, unknown>, key, value) {
    const raw = this[key];
    return raw instanceof Uint8Array
      ? Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('base64')
      : value;
  });
}

/** The output of a 200, or the service's exception the answer names, as the SDK would throw it. */
function outputOf(answer: EmulatorAnswer, protocol: JsonProtocol): object {
  const $metadata = {
    httpStatusCode: answer.statusCode,
    requestId: answer.headers['x-amzn-requestid'] ?? answer.headers['x-amz-request-id'],
    attempts: 1,
    totalRetryDelay: 0,
  };
  // Blobs are rare (a string holding `"B` or `"Binary` is enough to take the slower way, never wrong).
  const body = (
    answer.body === ''
      ? {}
      : answer.body.includes('"B')
        ? JSON.parse(answer.body, protocol.reviveBlobs)
        : JSON.parse(answer.body)
  ) as Record<string, unknown>;
  if (answer.statusCode === 200) return { $metadata, ...body };
  throw exceptionOf(body, $metadata, answer.statusCode, protocol);
}

function exceptionOf(
  body: Record<string, unknown>,
  $metadata: object,
  statusCode: number,
  protocol: JsonProtocol,
): Error {
  const { __type, message, Message, ...fields } = body;
  // `com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException` -> its last part.
  const type = String(__type ?? (statusCode >= 500 ? 'InternalServerError' : 'UnknownError'));
  const name = type.slice(type.lastIndexOf('#') + 1);
  const options = { ...fields, message: String(message ?? Message ?? name), $metadata };
  const Exception = protocol.exceptions[name];
  if (typeof Exception === 'function' && Exception.prototype instanceof protocol.base)
    return new (Exception as new (options: object) => Error)(options);
  return new protocol.base({
    ...options,
    name,
    $fault: statusCode >= 500 ? 'server' : 'client',
  } as never);
}

const fromBase64 = (text: string) => new Uint8Array(Buffer.from(text, 'base64'));
