import { SQSClient } from '@aws-sdk/client-sqs';
import { config } from '../config.js';
import { metering, usage } from '../metrics/usage.js';

let client: SQSClient | undefined;

/**
 * One SQS client per process; the endpoint comes from AWS_ENDPOINT_URL_SQS / AWS_ENDPOINT_URL. With an
 * endpoint override (LocalStack, the embedded runtime) requests go there, not to the queue URL's host.
 */
export function sqsClient(): SQSClient {
  const overridden = !!(process.env.AWS_ENDPOINT_URL_SQS || process.env.AWS_ENDPOINT_URL);
  if (client) return client;
  client = new SQSClient({ region: config().region, maxAttempts: 5, useQueueUrlAsEndpoint: !overridden });
  if (metering()) {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { Entries?: unknown[] };
        if (context.commandName === 'SendMessageCommand') usage.sqsMessagesSent += 1;
        if (context.commandName === 'SendMessageBatchCommand')
          usage.sqsMessagesSent += input.Entries?.length ?? 0;
        return next(args);
      },
      { step: 'initialize', name: 'fogbridgeUsageMeter' },
    );
  }
  return client;
}
