import { SQSClient } from '@aws-sdk/client-sqs';
import { currentContext, perContext } from '../context.js';
import { measureCalls } from '../metrics/operations.js';

/**
 * One SQS client per context. With an endpoint override (LocalStack, the embedded runtime) requests go
 * there, not to the queue URL's host.
 */
export const sqsClient = perContext(function sqsClient(settings): SQSClient {
  const { hooks } = currentContext();
  const client = new SQSClient({
    region: settings.region,
    maxAttempts: 5,
    // The middleware stack is resolved once per command type, not on every send (all middleware below is
    // added before the first send).
    cacheMiddleware: true,
    useQueueUrlAsEndpoint: !settings.endpoints.sqs,
    ...(settings.endpoints.sqs ? { endpoint: settings.endpoints.sqs } : {}),
    ...(settings.credentials ? { credentials: settings.credentials } : {}),
    ...hooks.clientOptions?.('sqs'),
  });
  measureCalls(client, 'sqs');
  hooks.clientBuilt?.('sqs', client);
  return client;
});
