import { AsyncResource } from 'node:async_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  acknowledgeAgentChanges,
  getAgentChanges,
  listAgentMicroservices,
} from '../../shared/commands/agent-protocol.js';
import { createApplication } from '../../shared/commands/applications.js';
import { listAgentVolumeMounts } from '../../shared/commands/volume-mounts.js';
import { parseCreateApplicationBody } from '../../shared/domain/registry-schema.js';
import { documentClient } from '../../shared/store/client.js';
import { getAccountRow } from '../../shared/store/nats-accounts.js';
import { givenAgent, givenMicroservice } from './fleet.js';
import { newWorld, stopStore, type World } from './harness.js';

/**
 * An agent polls whenever it likes, also between two writes of the reconcile that changes its NATS
 * files. Given a leaf agent that has applied everything it was told, when its leaf starts linking into
 * a second application's account and the agent polls after every write the commands and reconciles
 * make (or the reconcile stops after writing its NATS instance and runs again), then the agent ends
 * with the JWT directory that holds that account, and it was told to rebuild its NATS process (the
 * leaf's config changed).
 */

const WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'BatchWriteItemCommand']);

/** Runs `work` outside every async context of the code under test (its read snapshot, its scopes). */
const outside = AsyncResource.bind(<T>(work: () => Promise<T>) => work());

/** What an Edgelet holds: each mount as last written (only a higher version is written), rebuilds seen. */
interface Edgelet {
  mounts: Map<string, { version: number; data: Record<string, string> }>;
  rebuilds: number;
}

/** One tick of Edgelet: the flags, what they say to read, and the acknowledgement of what it saw. */
async function poll(world: World, agentUuid: string, edgelet: Edgelet): Promise<void> {
  await world.run(async () => {
    const changes = await getAgentChanges(agentUuid);
    if (changes.volumeMounts) {
      for (const mount of await listAgentVolumeMounts(agentUuid)) {
        const held = edgelet.mounts.get(mount.name);
        if (!held || mount.version > held.version)
          edgelet.mounts.set(mount.name, { version: mount.version, data: mount.data });
      }
    }
    if (changes.microserviceList) {
      const nats = (await listAgentMicroservices(agentUuid)).find((microservice) => microservice.isNats);
      if (nats?.rebuild) edgelet.rebuilds += 1;
    }
    await acknowledgeAgentChanges(agentUuid, { lastUpdated: Number(changes.lastUpdated) });
  });
}

/** The account files (public key -> JWT) of the agent's JWT directory as its Edgelet holds it. */
function directoryOf(edgelet: Edgelet): string[] {
  const directory = [...edgelet.mounts.entries()].find(([name]) => name.includes('jwt'));
  return Object.keys(directory?.[1].data ?? {}).sort();
}

async function accountFile(world: World, application: string): Promise<string> {
  const account = await world.run(() => getAccountRow(application));
  return `${account!.publicKey}.jwt`;
}

/**
 * A fleet: the hub and the leaf agent `fog` running `checkout` of `orders` (NATS access), settled, its
 * Edgelet current.
 */
async function givenFleet(): Promise<{ world: World; fog: string; edgelet: Edgelet }> {
  const world = await newWorld();
  await givenAgent(world, { name: 'hub', host: 'hub.example.com' });
  const fog = await givenAgent(world, { uuid: 'fog', name: 'fog', host: '10.0.0.5', natsMode: 'leaf' });
  for (const name of ['orders', 'billing'])
    await world.run(() =>
      createApplication(parseCreateApplicationBody({ name, natsConfig: { natsAccess: true } })),
    );
  await givenMicroservice(world, {
    name: 'checkout',
    application: 'orders',
    agentName: 'fog',
    natsConfig: { natsAccess: true },
  });
  await world.settle();
  const edgelet: Edgelet = { mounts: new Map(), rebuilds: 0 };
  await poll(world, fog, edgelet);
  return { world, fog, edgelet };
}

/** Every write of the store is followed by `after` (once it returned), outside the writer's context. */
async function afterEveryWrite(
  world: World,
  name: string,
  after: (command: string, input: unknown) => Promise<void>,
) {
  let inside = false;
  await world.run(async () =>
    documentClient().middlewareStack.add(
      (next, context) => async (args) => {
        const result = await next(args);
        if (!inside && WRITES.has(String(context.commandName))) {
          inside = true;
          try {
            await outside(() => after(String(context.commandName), args.input));
          } finally {
            inside = false;
          }
        }
        return result;
      },
      { step: 'initialize', name },
    ),
  );
}

const pay = { name: 'pay', application: 'billing', agentName: 'fog', natsConfig: { natsAccess: true } };

let worlds: World[] = [];

beforeAll(() => {
  worlds = [];
});

afterAll(async () => {
  for (const world of worlds) world.dispose();
  await stopStore();
});

describe("a leaf's new account link reaches its Edgelet", () => {
  it('when the agent polls after every write of the commands and reconciles', async () => {
    // Prepare
    const { world, fog, edgelet } = await givenFleet();
    worlds.push(world);
    const before = { directory: directoryOf(edgelet), rebuilds: edgelet.rebuilds };
    let polls = 0;
    await afterEveryWrite(world, 'edgeletPollsBetweenWrites', async () => {
      polls += 1;
      await poll(world, fog, edgelet);
    });

    // Act
    await givenMicroservice(world, pay);
    await world.settle();
    await poll(world, fog, edgelet);

    // Assess
    expect(polls).toBeGreaterThan(10);
    expect(before.directory).toContain(await accountFile(world, 'orders'));
    expect(before.directory).not.toContain(await accountFile(world, 'billing'));
    expect(directoryOf(edgelet)).toContain(await accountFile(world, 'billing'));
    expect(directoryOf(edgelet)).toContain(await accountFile(world, 'orders'));
    expect(edgelet.rebuilds).toBeGreaterThan(before.rebuilds);
  });

  it('when its reconcile stops right after writing the NATS instance and runs again', async () => {
    // Prepare
    const { world, fog, edgelet } = await givenFleet();
    worlds.push(world);
    let stopped = false;
    await afterEveryWrite(world, 'stopAfterInstanceWrite', async (command, input) => {
      const item = (input as { Item?: { PK?: string } }).Item;
      if (!stopped && command === 'PutItemCommand' && item?.PK === `NATSINSTANCE#${fog}`) {
        stopped = true;
        throw new Error('the worker stopped here');
      }
    });

    // Act: the reconciles run; the one that stopped is delivered again, as the queue does
    await givenMicroservice(world, pay);
    await expect(world.runQueued(() => true)).rejects.toThrow('the worker stopped here');
    await world.settle();
    await poll(world, fog, edgelet);

    // Assess
    expect(stopped).toBe(true);
    expect(directoryOf(edgelet)).toContain(await accountFile(world, 'billing'));
    expect(edgelet.rebuilds).toBeGreaterThan(0);
  });
});
