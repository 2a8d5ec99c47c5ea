import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { lambdaContext } from './lambda-context.js';

export type SqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | undefined>;

export interface PollerOptions {
  sqs: SQSClient;
  queueUrl: string;
  queueArn: string;
  functionName: string;
  handler: SqsHandler;
  /** Concurrent receive loops, like Lambda's concurrent batches for one event source. */
  concurrency: number;
  batchSize: number;
  /** The queue's visibility timeout: a batch still being handled is kept invisible in steps of it. */
  visibilityTimeoutSeconds: number;
  onError?: (error: unknown) => void;
  /**
   * The embedded runtime's API requests in flight: while it is above 0 a loop waits (up to
   * API_YIELD_MAX_MS each time) before it receives and before it invokes. Locally the API and the
   * workers share one embedded store and two cores (in AWS each has its own instances and DynamoDB
   * scales), so the API is answered first.
   */
  apiInFlight?: Int32Array;
}

/** The longest a receive loop waits for the API to go quiet: reconciles keep going under sustained load. */
const API_YIELD_MAX_MS = 250;

/**
 * Drives a worker handler the way Lambda's SQS event source does: receive a batch, invoke, delete the
 * records the handler did not report in batchItemFailures, leave the rest to reappear after the
 * visibility timeout (and go to the DLQ after maxReceiveCount). A handler that throws fails the batch.
 * While a batch runs its messages stay invisible (renewed every half timeout): in AWS the function's
 * timeout is below the queue's visibility timeout, so a running invocation is never handed out twice;
 * the local queues' timeout is short only so that failed messages come back quickly.
 */
export function startSqsPoller(options: PollerOptions): { stop: () => Promise<void> } {
  let running = true;
  const loops = Array.from({ length: options.concurrency }, () => pollLoop());

  async function pollLoop(): Promise<void> {
    while (running) {
      try {
        await apiQuiet();
        const { Messages } = await options.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: options.queueUrl,
            MaxNumberOfMessages: options.batchSize,
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
        );
        if (!running) return;
        if (!Messages || Messages.length === 0) continue;
        await apiQuiet();
        await invoke(Messages);
      } catch (error) {
        if (!running) return;
        options.onError?.(error);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  async function apiQuiet(): Promise<void> {
    const inFlight = options.apiInFlight;
    if (!inFlight) return;
    for (let waited = 0; Atomics.load(inFlight, 0) > 0 && waited < API_YIELD_MAX_MS; waited += 5)
      await new Promise((resolve) => setTimeout(resolve, 5));
  }

  async function invoke(messages: Message[]): Promise<void> {
    const event: SQSEvent = { Records: messages.map((message) => toRecord(message, options.queueArn)) };
    let failed = new Set<string>();
    const keepInvisible = setInterval(
      () => {
        options.sqs
          .send(
            new ChangeMessageVisibilityBatchCommand({
              QueueUrl: options.queueUrl,
              Entries: messages.map((message, index) => ({
                Id: String(index),
                ReceiptHandle: message.ReceiptHandle!,
                VisibilityTimeout: options.visibilityTimeoutSeconds,
              })),
            }),
          )
          .catch((error: unknown) => options.onError?.(error));
      },
      (options.visibilityTimeoutSeconds * 1000) / 2,
    );
    try {
      const response = await options.handler(event, lambdaContext(options.functionName));
      failed = new Set((response?.batchItemFailures ?? []).map((failure) => failure.itemIdentifier));
    } catch (error) {
      options.onError?.(error);
      return;
    } finally {
      clearInterval(keepInvisible);
    }
    const done = messages.filter((message) => !failed.has(message.MessageId!));
    if (done.length === 0) return;
    await options.sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: options.queueUrl,
        Entries: done.map((message, index) => ({ Id: String(index), ReceiptHandle: message.ReceiptHandle! })),
      }),
    );
  }

  return {
    stop: async () => {
      running = false;
      await Promise.allSettled(loops);
    },
  };
}

function toRecord(message: Message, queueArn: string): SQSRecord {
  const attributes = message.Attributes ?? {};
  return {
    messageId: message.MessageId!,
    receiptHandle: message.ReceiptHandle!,
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? '1',
      SentTimestamp: attributes.SentTimestamp ?? String(Date.now()),
      SenderId: attributes.SenderId ?? 'local',
      ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
      MessageGroupId: attributes.MessageGroupId,
      MessageDeduplicationId: attributes.MessageDeduplicationId,
      SequenceNumber: attributes.SequenceNumber,
    },
    messageAttributes: {},
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: queueArn.split(':')[3] ?? 'us-east-1',
  };
}
