import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApplication } from '../../shared/commands/applications.js';
import { rotateOperator } from '../../shared/commands/nats-accounts.js';
import { parseCreateApplicationBody } from '../../shared/domain/registry-schema.js';
import { changeAgent, givenAgent, givenApplication, givenMicroservice, givenService } from './fleet.js';
import { newWorld, type Sent, stopStore, type World } from './harness.js';

/**
 * What each request kind asks of the store and the queue, counted by the operation observer the
 * workers report to, so a change to a reconcile's read or write plan shows here as a reviewed change.
 * Given the fleet below (a fresh copy per case), when something changes and the commands' requests of
 * the other kinds have run, then one request of the kind measured makes exactly these calls (by
 * command) and counts these events. Each request is run alone, as a lone queue record is: without the
 * batch read a worker makes for a queue batch of several. Every tell of a change to a site is followed
 * by one write: its marker waits for the raise that told it (per-site status never says applied early).
 */

let fleet: World;
const MS_WEB = '11111111-1111-4111-8111-000000000001';
const MS_API = '11111111-1111-4111-8111-000000000002';

beforeAll(async () => {
  fleet = await newWorld();
  await givenAgent(fleet, { name: 'hub', host: 'hub.example.com' });
  await givenAgent(fleet, {
    uuid: 'a',
    name: 'a',
    host: '10.0.0.1',
    tags: ['service.iofog.org/tag: shop'],
    natsMode: 'none',
  });
  await givenApplication(fleet, 'orders');
  await givenMicroservice(fleet, { uuid: MS_WEB, name: 'web', application: 'orders', agentName: 'a' });
  await fleet.settle();
}, 120_000);

afterAll(async () => {
  fleet?.dispose();
  await stopStore();
});

/** The request kind a queued message carries, as the workers read it. */
function kindOf(sent: Sent): string {
  if (sent.queue === 'service') return 'service';
  if (sent.body.service !== undefined) return 'service-entries';
  if (sent.body.routerKey.startsWith('nats-app:')) return 'nats-application';
  if (sent.body.routerKey === 'nats-operator' || sent.body.routerKey === 'nats-hub')
    return sent.body.routerKey;
  return 'router';
}

const microserviceService = { name: 'web', type: 'microservice', resource: MS_WEB, targetPort: 8080 };
const externalService = {
  name: 'shop',
  type: 'external',
  resource: 'shop.example.com',
  targetPort: 443,
  tags: ['shop'],
};

describe('the calls of one request, by kind', () => {
  it.each<{
    request: string;
    kind: string;
    /** What happens first; its requests of other kinds run before the measured one. */
    given: (world: World) => Promise<unknown>;
    /** Requests of other kinds left queued (not run before the measured one). */
    held?: (sent: Sent) => boolean;
    calls: Record<string, number>;
    events: Record<string, number>;
  }>([
    {
      request: 'a new service (its hub entries written, its routers asked)',
      kind: 'service',
      given: (world) => givenService(world, externalService),
      calls: {
        BatchGetItemCommand: 4,
        BatchWriteItemCommand: 3,
        GetItemCommand: 2,
        PutItemCommand: 2,
        QueryCommand: 2,
        SendMessageBatchCommand: 1,
        UpdateItemCommand: 8,
      },
      events: { 'hub write': 1 },
    },
    {
      request: "a fan-out writing the service's connector on its backend's agent",
      kind: 'service-entries',
      given: (world) => givenService(world, microserviceService),
      calls: {
        BatchGetItemCommand: 1,
        BatchWriteItemCommand: 1,
        GetItemCommand: 4,
        PutItemCommand: 1,
        UpdateItemCommand: 3,
      },
      events: { 'router reconcile': 1 },
    },
    {
      request: 'a fan-out to an agent whose router has no config yet (its whole computation asked for)',
      kind: 'service-entries',
      given: async (world) => {
        await givenAgent(world, { uuid: 'b', name: 'b', host: '10.0.0.2', natsMode: 'none' });
        await givenMicroservice(world, { uuid: MS_API, name: 'api', application: 'orders', agentName: 'b' });
        await givenService(world, { name: 'api', type: 'microservice', resource: MS_API, targetPort: 8080 });
      },
      held: (sent) => sent.queue === 'fog' && kindOf(sent) === 'router' && sent.body.routerKey === 'b',
      calls: { BatchGetItemCommand: 1, GetItemCommand: 2, SendMessageBatchCommand: 1, UpdateItemCommand: 2 },
      events: { 'router reconcile': 1 },
    },
    {
      request: 'a fan-out to an agent whose distribution set holds the service (told, nothing written)',
      kind: 'service-entries',
      given: (world) => givenService(world, externalService),
      calls: { BatchGetItemCommand: 1, UpdateItemCommand: 2 },
      events: { 'router reconcile': 1 },
    },
    {
      request: 'an agent change nothing placed on its router reads',
      kind: 'router',
      given: (world) => changeAgent(world, 'a', { description: 'the shop floor' }),
      calls: { BatchGetItemCommand: 2, PutItemCommand: 1, UpdateItemCommand: 1 },
      events: { 'router reconcile': 1 },
    },
    {
      request: 'a request a later computation covered (skipped)',
      kind: 'router',
      given: async (world) => {
        await changeAgent(world, 'a', { description: 'first' });
        await changeAgent(world, 'a', { description: 'second' });
        await world.runQueued(
          (sent) => sent === world.queued().find((queued) => kindOf(queued) === 'router'),
        );
      },
      calls: { BatchGetItemCommand: 1 },
      events: {},
    },
    {
      request: "a new agent's first computation (no NATS)",
      kind: 'router',
      given: (world) => givenAgent(world, { uuid: 'b', name: 'b', host: '10.0.0.2', natsMode: 'none' }),
      calls: {
        BatchGetItemCommand: 2,
        BatchWriteItemCommand: 1,
        GetItemCommand: 2,
        PutItemCommand: 2,
        QueryCommand: 1,
        UpdateItemCommand: 3,
      },
      events: { 'router reconcile': 1 },
    },
    {
      request: "a new leaf agent's first computation (its NATS leaf too)",
      kind: 'router',
      given: (world) => givenAgent(world, { uuid: 'c', name: 'c', host: '10.0.0.3', natsMode: 'leaf' }),
      calls: {
        BatchGetItemCommand: 2,
        BatchWriteItemCommand: 1,
        GetItemCommand: 2,
        PutItemCommand: 9,
        QueryCommand: 2,
        // Its NATS instance's pending tell is cleared once the agent is told (see `deliver`).
        UpdateItemCommand: 6,
      },
      events: { 'router reconcile': 1 },
    },
    {
      request: "an application's NATS account and user, re-signed by a new operator",
      kind: 'nats-application',
      given: async (world) => {
        await world.run(() =>
          createApplication(
            parseCreateApplicationBody({ name: 'billing', natsConfig: { natsAccess: true } }),
          ),
        );
        await givenMicroservice(world, {
          name: 'pay',
          application: 'billing',
          agentName: 'a',
          natsConfig: { natsAccess: true },
        });
        await world.run(() => rotateOperator());
      },
      calls: {
        GetItemCommand: 6,
        PutItemCommand: 2,
        QueryCommand: 3,
        SendMessageBatchCommand: 1,
        UpdateItemCommand: 6,
      },
      events: {},
    },
    {
      request: "a new operator's re-signing",
      kind: 'nats-operator',
      given: (world) => world.run(() => rotateOperator()),
      calls: { GetItemCommand: 3, QueryCommand: 2, SendMessageBatchCommand: 1, UpdateItemCommand: 2 },
      events: {},
    },
  ])('$kind: $request', async ({ kind, given, held, calls, events }) => {
    // Prepare
    const world = await newWorld({}, fleet);
    try {
      await given(world);
      await world.runQueued((sent) => kindOf(sent) !== kind && !held?.(sent));

      // Act
      const [measured, ...others] = await world.measureQueued((sent) => kindOf(sent) === kind);

      // Assess
      expect(others).toEqual([]);
      expect({ calls: measured?.calls, events: measured?.events }).toEqual({ calls, events });
    } finally {
      world.dispose();
    }
  });
});
