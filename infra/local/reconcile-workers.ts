import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import * as fogWorker from '../../functions/workers/fog-reconcile.js';
import * as serviceWorker from '../../functions/workers/service-reconcile.js';
import { type AppContext, runInContext } from '../../shared/context.js';
import { logger } from '../../shared/log/logger.js';
import { sweep } from '../../shared/reconcile/sweeper.js';
import type { QueueUrls } from './queues.js';
import { type SqsHandler, startSqsPoller } from './sqs-poller.js';

export interface ReconcileWorkerOptions {
  sqs: SQSClient;
  queues: QueueUrls;
  /** The context every invocation runs in (configuration and clients). */
  context: AppContext;
  concurrency: number;
  /** The API's requests in flight (see PollerOptions.apiInFlight). */
  apiInFlight?: Int32Array;
  visibilityTimeoutSeconds: number;
  sweepIntervalMs: number;
  /**
   * `all`: both queues and the periodic sweep; `fog`: the fog queue only, another consumer of it (a
   * fan-out to 1,000 routers is the one load that needs more than one thread).
   */
  role?: 'all' | 'fog';
}

/**
 * The two reconcile functions behind their SQS event sources, and the periodic sweep: everything of the
 * embedded runtime that is not the API. Runs in the API's thread or in a thread of its own
 * (workers-thread.ts); either way the same handlers with Lambda's batch semantics.
 */
export async function startReconcileWorkers(
  options: ReconcileWorkerOptions,
): Promise<{ stop: () => Promise<void> }> {
  const { sqs, queues, context } = options;
  const inContext =
    <E, R>(handler: (event: E, lambdaContext: never) => Promise<R>) =>
    (event: E, lambdaContext: never) =>
      runInContext(context, () => handler(event, lambdaContext));
  const arnOf = async (url: string) =>
    (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] })))
      .Attributes!.QueueArn!;
  const onError = (error: unknown) =>
    runInContext(context, () => logger.error('local poller error', { error: error as Error }));
  const poll = async (queueUrl: string, functionName: string, handler: SqsHandler) =>
    startSqsPoller({
      sqs,
      queueUrl,
      queueArn: await arnOf(queueUrl),
      functionName,
      handler,
      concurrency: options.concurrency,
      batchSize: 10,
      visibilityTimeoutSeconds: options.visibilityTimeoutSeconds,
      ...(options.apiInFlight ? { apiInFlight: options.apiInFlight } : {}),
      onError,
    });
  const everything = (options.role ?? 'all') === 'all';
  const pollers = [
    ...(everything
      ? [
          await poll(
            queues.service,
            'fogbridge-service-reconcile',
            inContext(serviceWorker.handler) as SqsHandler,
          ),
        ]
      : []),
    await poll(queues.fog, 'fogbridge-fog-reconcile', inContext(fogWorker.handler) as SqsHandler),
  ];
  const sweepTimer = everything
    ? setInterval(() => {
        runInContext(context, () =>
          sweep({ full: false }).catch((error: unknown) =>
            logger.error('sweep failed', { error: error as Error }),
          ),
        );
      }, options.sweepIntervalMs)
    : undefined;
  sweepTimer?.unref();
  return {
    stop: async () => {
      clearInterval(sweepTimer);
      await Promise.all(pollers.map((poller) => poller.stop()));
    },
  };
}
