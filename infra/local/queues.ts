import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';

export const QUEUE_NAMES = {
  service: 'service-reconcile.fifo',
  serviceDlq: 'service-reconcile-dlq.fifo',
  fog: 'fog-reconcile.fifo',
  fogDlq: 'fog-reconcile-dlq.fifo',
} as const;

export interface QueueUrls {
  service: string;
  serviceDlq: string;
  fog: string;
  fogDlq: string;
}

/** Creates the two FIFO queues and their FIFO DLQs with the same redrive the CDK stack sets. */
export async function ensureQueues(
  sqs: SQSClient,
  options: { visibilityTimeoutSeconds: number; maxReceiveCount: number },
): Promise<QueueUrls> {
  const fifo = { FifoQueue: 'true', ContentBasedDeduplication: 'false' };
  const create = async (name: string, attributes: Record<string, string>) =>
    (await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { ...fifo, ...attributes } })))
      .QueueUrl!;
  const arnOf = async (url: string) =>
    (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] })))
      .Attributes!.QueueArn!;
  const redrive = (dlqArn: string) =>
    JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: String(options.maxReceiveCount) });
  const serviceDlq = await create(QUEUE_NAMES.serviceDlq, { MessageRetentionPeriod: '1209600' });
  const fogDlq = await create(QUEUE_NAMES.fogDlq, { MessageRetentionPeriod: '1209600' });
  const visibility = { VisibilityTimeout: String(options.visibilityTimeoutSeconds) };
  const service = await create(QUEUE_NAMES.service, {
    ...visibility,
    RedrivePolicy: redrive(await arnOf(serviceDlq)),
  });
  const fog = await create(QUEUE_NAMES.fog, { ...visibility, RedrivePolicy: redrive(await arnOf(fogDlq)) });
  return { service, serviceDlq, fog, fogDlq };
}
