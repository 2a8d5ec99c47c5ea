import { randomUUID } from 'node:crypto';
import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mapWithConcurrency } from '../concurrency.js';
import { config } from '../context.js';
import { agentIndexTokens } from '../domain/distribution.js';
import { documentClient, keys, tableName } from '../store/client.js';
import { sqsClient } from './client.js';
import {
  type FogReconcileMessage,
  NATS_HUB_KEY,
  NATS_OPERATOR_KEY,
  natsApplicationKey,
  type ServiceReconcileMessage,
} from './messages.js';

function queueUrl(name: 'SERVICE_QUEUE_URL' | 'FOG_QUEUE_URL'): string {
  const url = name === 'SERVICE_QUEUE_URL' ? config().serviceQueueUrl : config().fogQueueUrl;
  if (!url)
    throw new Error(`Environment variable ${name} is not set; it is required to enqueue reconcile work`);
  return url;
}

/**
 * Enqueues a service reconcile. The dedup id is name, generation, cause (an API change or a sweeper
 * re-drive) and the row's creation stamp: a name deleted and created again restarts at generation 1,
 * and without the stamp its first message would be dropped as a duplicate of the old one's.
 */
export async function enqueueServiceReconcile(
  message: ServiceReconcileMessage,
  cause: string,
  createdAt = '',
): Promise<void> {
  await sqsClient().send(
    new SendMessageCommand({
      QueueUrl: queueUrl('SERVICE_QUEUE_URL'),
      MessageBody: JSON.stringify(message),
      MessageGroupId: message.name,
      MessageDeduplicationId: dedupId(
        `${message.name}:${message.generation}:${cause}${createdAt ? `:${createdAt.replace(/\D/g, '')}` : ''}`,
      ),
    }),
  );
}

/**
 * What a sender knows of an agent it asks to reconcile: the worker's batch read is keyed by it, and the
 * request records the tokens the agent is to be indexed under.
 */
export interface AgentHint {
  name: string;
  tags: readonly string[];
  routerMode: string;
}

const agentHint = (agent: AgentHint | undefined) =>
  agent ? { agentName: agent.name, agentTags: [...agent.tags] } : {};

/**
 * Asks each router to converge one service's entries (a fan-out); with `raise`, the service's listener
 * in a set the agents select changed, and each is told even when nothing under its own router did.
 */
export function askRoutersForService(
  routerKeys: Iterable<string>,
  service: string,
  options: { raise?: boolean } = {},
): Promise<void> {
  return enqueueFogReconciles(routerKeys, service, options);
}

/**
 * Asks each router for a whole computation (an agent's own part with it); `full` also recomputes every
 * entry (a re-drive), `agents` says what the sender knows of them (see `AgentHint`).
 */
export function askRouterReconciles(
  routerKeys: Iterable<string>,
  options: { full?: boolean; agents?: Readonly<Record<string, AgentHint>> } = {},
): Promise<void> {
  return enqueueFogReconciles(routerKeys, undefined, options);
}

/** Asks for the NATS hub's Kubernetes write-backs to be checked and rewritten. */
export function askNatsHubReconcile(): Promise<void> {
  return enqueueFogReconciles([NATS_HUB_KEY]);
}

/** Asks for these applications' NATS accounts and users to be converged. */
export function askNatsApplicationReconciles(applications: Iterable<string>): Promise<void> {
  return enqueueFogReconciles([...applications].map(natsApplicationKey));
}

/** Asks for what a new NATS operator has to re-sign to be found and re-signed. */
export function askNatsOperatorReconcile(): Promise<void> {
  return enqueueFogReconciles([NATS_OPERATOR_KEY]);
}

/**
 * Requests a reconcile of each router (the wire form behind the three asks above). Every request takes the next number of that router's request
 * counter, so a worker that already computed past a number skips it: a burst of fan-outs to one agent
 * costs one computation, and no request is ever deduplicated away before it was covered.
 */
export async function enqueueFogReconciles(
  routerKeys: Iterable<string>,
  service?: string,
  options: { raise?: boolean; full?: boolean; agents?: Readonly<Record<string, AgentHint>> } = {},
): Promise<void> {
  // A service fan-out is one message per router and nothing else: no request counter to stamp (those
  // messages are never skipped), and a dedup id of its own so a later fan-out is never taken for it.
  const fanOut = service === undefined ? undefined : randomUUID();
  const messages: FogReconcileMessage[] = await Promise.all(
    [...new Set(routerKeys)].map(async (routerKey) =>
      service === undefined
        ? {
            routerKey,
            seq: await nextRouterRequest(routerKey, options.full ?? false, options.agents?.[routerKey]),
            ...agentHint(options.agents?.[routerKey]),
          }
        : { routerKey, seq: 0, service, ...(options.raise ? { raise: true } : {}) },
    ),
  );
  const batches = Array.from({ length: Math.ceil(messages.length / 10) }, (_, i) =>
    messages.slice(i * 10, i * 10 + 10),
  );
  // A fan-out to 1,000 agents is 100 batches: sent 16 at a time rather than one after another.
  await mapWithConcurrency(batches, 16, async (batch) => {
    const result = await sqsClient().send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl('FOG_QUEUE_URL'),
        Entries: batch.map((message, index) => ({
          Id: String(index),
          MessageBody: JSON.stringify(message),
          MessageGroupId: message.routerKey,
          MessageDeduplicationId: dedupId(
            fanOut === undefined ? `${message.routerKey}:${message.seq}` : `${message.routerKey}:${fanOut}`,
          ),
        })),
      }),
    );
    if (result.Failed && result.Failed.length > 0) {
      const failure = result.Failed[0]!;
      throw new Error(
        `Could not enqueue router reconcile: ${failure.Code ?? ''} ${failure.Message ?? ''}`.trim(),
      );
    }
  });
}

/**
 * The next request number of a router. Such a request (an agent change, a CA import, a re-drive) also
 * stamps `fabricRequested`: the worker that covers it runs the agent's fabric steps (certificates, NATS)
 * and recomputes its router (the entries only when what placement reads of it moved). A `full` request
 * (the sweeper's) stamps `fullRequested` too: the worker that covers it recomputes every entry.
 * An agent change's request adds the tokens the agent's tags select to what the agent has indexed (see
 * `Applied`, kept on this record): the intent its reconcile would otherwise write first.
 */
async function nextRouterRequest(routerKey: string, full: boolean, agent?: AgentHint): Promise<number> {
  const next = 'if_not_exists(requested, :zero) + :one';
  const tokens = agent ? agentIndexTokens(agent, config().serviceAnnotationTag) : [];
  const { Attributes } = await documentClient().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.routerRequests(routerKey),
      UpdateExpression: `SET requested = ${next}, fabricRequested = ${next}${full ? `, fullRequested = ${next}` : ''}${tokens.length > 0 ? ' ADD #tokens :tokens' : ''}`,
      ...(tokens.length > 0 ? { ExpressionAttributeNames: { '#tokens': 'tokens' } } : {}),
      ExpressionAttributeValues: {
        ':zero': 0,
        ':one': 1,
        ...(tokens.length > 0 ? { ':tokens': new Set(tokens) } : {}),
      },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  return Number(Attributes?.requested);
}

/** SQS caps dedup ids at 128 characters of [A-Za-z0-9!-~]. */
function dedupId(raw: string): string {
  const safe = raw.replace(/[^\x21-\x7e]/g, '_');
  return safe.length <= 128 ? safe : safe.slice(0, 128);
}
