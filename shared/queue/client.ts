import { SQSClient } from '@aws-sdk/client-sqs';
import { perContext } from '../context.js';
import { recordServiceCall, usage } from '../metrics/usage.js';
import { placeholderSigner } from '../placeholder-signer.js';

/**
 * One SQS client per context. With an endpoint override (LocalStack, the embedded runtime) requests go
 * there, not to the queue URL's host.
 */
export const sqsClient = perContext(function sqsClient(settings): SQSClient {
  const client = new SQSClient({
    region: settings.region,
    maxAttempts: 5,
    // The middleware stack is resolved once per command type, not on every send (all middleware below is
    // added before the first send).
    cacheMiddleware: true,
    useQueueUrlAsEndpoint: !settings.endpoints.sqs,
    ...(settings.endpoints.sqs ? { endpoint: settings.endpoints.sqs } : {}),
    ...(settings.credentials ? { credentials: settings.credentials } : {}),
    ...(settings.placeholderSignatures ? { signer: placeholderSigner(settings.region, 'sqs') } : {}),
  });
  if (settings.injectedLatency.sqs > 0) {
    // The benchmark's model of the network between a Lambda and SQS (embedded runtime only).
    const delay = settings.injectedLatency.sqs;
    client.middlewareStack.add(
      (next) => async (args) => {
        await new Promise((resolve) => setTimeout(resolve, delay));
        return next(args);
      },
      { step: 'initialize', name: 'fogbridgeInjectedLatency' },
    );
  }
  if (settings.meterUsage) {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { Entries?: unknown[] };
        if (context.commandName === 'SendMessageCommand') usage.sqsMessagesSent += 1;
        recordServiceCall();
        if (context.commandName === 'SendMessageBatchCommand')
          usage.sqsMessagesSent += input.Entries?.length ?? 0;
        return next(args);
      },
      { step: 'initialize', name: 'fogbridgeUsageMeter' },
    );
  }
  return client;
});
