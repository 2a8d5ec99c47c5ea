import { SQSClient } from '@aws-sdk/client-sqs';
import { config } from '../config.js';

let client: SQSClient | undefined;

/**
 * One SQS client per process; the endpoint comes from AWS_ENDPOINT_URL_SQS / AWS_ENDPOINT_URL. With an
 * endpoint override (LocalStack, the embedded runtime) requests go there, not to the queue URL's host.
 */
export function sqsClient(): SQSClient {
  const overridden = !!(process.env.AWS_ENDPOINT_URL_SQS || process.env.AWS_ENDPOINT_URL);
  client ??= new SQSClient({ region: config().region, maxAttempts: 5, useQueueUrlAsEndpoint: !overridden });
  return client;
}
