import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createApplication,
  deleteApplication,
  updateApplication,
} from '../../shared/commands/applications.js';
import { deleteMicroservice, updateMicroservice } from '../../shared/commands/microservices.js';
import { rotateOperator } from '../../shared/commands/nats-accounts.js';
import { revokeUsers } from '../../shared/commands/nats-applications.js';
import { MAX_REVOCATIONS } from '../../shared/commands/nats-issuing.js';
import {
  parseCreateApplicationBody,
  parsePatchMicroserviceBody,
} from '../../shared/domain/registry-schema.js';
import { sweep } from '../../shared/reconcile/sweeper.js';
import {
  deleteMicroservice as deleteMicroserviceRow,
  getMicroservice,
  listMicroservicesOfApplication,
} from '../../shared/store/applications.js';
import { documentClient } from '../../shared/store/client.js';
import { getNatsInstance } from '../../shared/store/nats.js';
import { getAccountRow, listUserRows, type UserRow } from '../../shared/store/nats-accounts.js';
import { givenAgent, givenMicroservice } from './fleet.js';
import { newWorld, stopStore, type World } from './harness.js';

/**
 * An application's NATS account and users, by its reconciles: given the hub, a leaf agent `fog` and
 * the application `orders` with NATS access whose microservice `checkout` on `fog` has it too, when
 * one thing changes and every reconcile it asks for runs, then the account is in this state, it has
 * these users, and the leaf links into these accounts.
 */

let fleet: World;

beforeAll(async () => {
  fleet = await newWorld();
  await givenAgent(fleet, { name: 'hub', host: 'hub.example.com' });
  await givenAgent(fleet, { uuid: 'fog', name: 'fog', host: '10.0.0.5', natsMode: 'leaf' });
  await fleet.settle();
}, 120_000);

afterAll(async () => {
  fleet?.dispose();
  await stopStore();
});

const checkout = {
  name: 'checkout',
  application: 'orders',
  agentName: 'fog',
  natsConfig: { natsAccess: true },
};

/** A world on the fleet with the application `orders` (NATS access) and its `checkout`, settled. */
async function givenOrdersWithCheckout(): Promise<{ world: World; uuid: string }> {
  const world = await newWorld({}, fleet);
  await world.run(() =>
    createApplication(parseCreateApplicationBody({ name: 'orders', natsConfig: { natsAccess: true } })),
  );
  const uuid = await givenMicroservice(world, checkout);
  await world.settle();
  return { world, uuid };
}

interface Outcome {
  account: 'none' | 'enabled' | 'disabled';
  users: string[];
  /** Keys revoked in the account since it was made. */
  revoked: number;
  leafLinks: string[];
}

async function outcome(world: World): Promise<Outcome> {
  return world.run(async () => {
    const account = await getAccountRow('orders');
    return {
      account: account ? (account.disabled ? 'disabled' : 'enabled') : 'none',
      users: (await listUserRows('orders')).map((user) => `${user.kind}:${user.name}`).sort(),
      revoked: Object.keys(account?.revocations ?? {}).length,
      leafLinks: (await getNatsInstance('fog'))?.leafAccounts ?? [],
    };
  });
}

const patchMicroservice = (uuid: string, body: Record<string, unknown>) => () =>
  updateMicroservice(uuid, parsePatchMicroserviceBody(body));

describe("an application's account and users", () => {
  it.each<{ when: string; change: (uuid: string) => () => Promise<unknown>; expected: Outcome }>([
    {
      when: 'nothing changes',
      change: () => async () => undefined,
      expected: {
        account: 'enabled',
        users: ['leaf:leaf-fog', 'microservice:checkout'],
        revoked: 0,
        leafLinks: ['orders'],
      },
    },
    {
      when: "the microservice's access is turned off",
      change: (uuid) => patchMicroservice(uuid, { natsConfig: { natsAccess: false } }),
      expected: { account: 'enabled', users: [], revoked: 2, leafLinks: [] },
    },
    {
      when: "the microservice's user rule changes",
      change: (uuid) => patchMicroservice(uuid, { natsConfig: { natsRule: 'default-mqtt-user' } }),
      expected: {
        account: 'enabled',
        users: ['leaf:leaf-fog', 'microservice:checkout'],
        revoked: 1,
        leafLinks: ['orders'],
      },
    },
    {
      when: 'the microservice moves to the hub (a server: no leaf link)',
      change: (uuid) => patchMicroservice(uuid, { agentName: 'hub' }),
      expected: { account: 'enabled', users: ['microservice:checkout'], revoked: 1, leafLinks: [] },
    },
    {
      when: 'the microservice is deleted',
      change: (uuid) => () => deleteMicroservice(uuid),
      expected: { account: 'enabled', users: [], revoked: 2, leafLinks: [] },
    },
    {
      when: "the application's access is turned off",
      change: () => () => updateApplication('orders', { natsConfig: { natsAccess: false } }),
      expected: { account: 'disabled', users: [], revoked: 2, leafLinks: [] },
    },
    {
      when: 'the application is deleted',
      change: () => () => deleteApplication('orders'),
      expected: { account: 'disabled', users: [], revoked: 2, leafLinks: [] },
    },
    {
      when: 'the operator is rotated (a new account key: nothing to revoke, every user reissued)',
      change: () => () => rotateOperator(),
      expected: {
        account: 'enabled',
        users: ['leaf:leaf-fog', 'microservice:checkout'],
        revoked: 0,
        leafLinks: ['orders'],
      },
    },
  ])('when $when', async ({ change, expected }) => {
    // Prepare
    const { world, uuid } = await givenOrdersWithCheckout();

    // Act
    await world.run(change(uuid));
    await world.settle();

    // Assess
    expect(await outcome(world)).toEqual(expected);
    world.dispose();
  });

  it('reissues every user under a new account key when the operator is rotated', async () => {
    // Prepare
    const { world } = await givenOrdersWithCheckout();
    const before = await world.run(async () => ({
      account: (await getAccountRow('orders'))!.publicKey,
      users: (await listUserRows('orders')).map((user) => user.publicKey),
    }));

    // Act
    await world.run(() => rotateOperator());
    await world.settle();

    // Assess
    const after = await world.run(async () => ({
      account: await getAccountRow('orders'),
      users: await listUserRows('orders'),
    }));
    expect(after.account!.publicKey).not.toBe(before.account);
    expect(after.users.every((user) => user.accountKey === after.account!.publicKey)).toBe(true);
    expect(after.users.map((user) => user.publicKey).filter((key) => before.users.includes(key))).toEqual([]);
    world.dispose();
  });
});

describe('the sweep', () => {
  it("revokes the user of a microservice deleted before its application's reconcile ran", async () => {
    // Prepare: the microservice's row goes, as a delete that stopped before its reconcile would leave it
    const { world, uuid } = await givenOrdersWithCheckout();
    await world.run(async () => {
      const row = (await getMicroservice(uuid))!;
      expect(await deleteMicroserviceRow(row)).toBe(true);
    });

    // Act
    await world.run(() => sweep({ full: false }));
    await world.settle();

    // Assess
    expect(await outcome(world)).toEqual({ account: 'enabled', users: [], revoked: 2, leafLinks: [] });
    world.dispose();
  });
});

type Next = (args: { input: object }) => Promise<unknown>;

describe('an index that still lists a deleted microservice', () => {
  it("does not keep the microservice's user: its delete revokes it all the same", async () => {
    // Prepare: the application's microservices as the index answered them before the delete, answered
    // again after it, as a DynamoDB index may for a moment
    const { world, uuid } = await givenOrdersWithCheckout();
    let listed: Record<string, unknown>[] | undefined;
    await world.run(async () =>
      documentClient().middlewareStack.add(
        ((next: Next, context: { commandName?: string }) => async (args: { input: object }) => {
          const result = (await next(args)) as { output: { Items?: Record<string, unknown>[] } };
          const items = result.output.Items;
          if (context.commandName !== 'QueryCommand' || !items) return result;
          if (items.some((item) => item.uuid === uuid)) listed = items;
          else if (listed && items.length === 0 && JSON.stringify(args.input).includes('orders/')) {
            return { ...result, output: { ...result.output, Items: listed } };
          }
          return result;
        }) as never,
        { step: 'initialize', name: 'laggingIndex' },
      ),
    );
    await world.run(() => listMicroservicesOfApplication('orders'));
    expect(listed).toHaveLength(1);

    // Act
    await world.run(() => deleteMicroservice(uuid));
    await world.settle();

    // Assess
    expect(await outcome(world)).toEqual({ account: 'enabled', users: [], revoked: 2, leafLinks: [] });
    world.dispose();
  });
});

describe('an account that has revoked many users', () => {
  it('gets a new key past MAX_REVOCATIONS: its revocations start afresh and its users are reissued', async () => {
    // Prepare
    const { world } = await givenOrdersWithCheckout();
    const before = await world.run(async () => (await getAccountRow('orders'))!);
    const gone = Array.from({ length: MAX_REVOCATIONS + 1 }, (_, i) => ({
      ...(before as unknown as UserRow),
      name: `gone-${i}`,
      kind: 'api' as const,
      publicKey: `UGONE${String(i).padStart(51, 'A')}`,
      version: 0,
    }));

    // Act
    await world.run(() => revokeUsers('orders', gone));
    await world.settle();

    // Assess
    const after = await world.run(async () => ({
      account: (await getAccountRow('orders'))!,
      users: await listUserRows('orders'),
    }));
    expect(after.account.publicKey).not.toBe(before.publicKey);
    expect(after.account.revocations).toEqual({});
    expect(
      after.users.map((user) => [user.name, user.accountKey === after.account.publicKey]).sort(),
    ).toEqual([
      ['checkout', true],
      ['leaf-fog', true],
    ]);
    world.dispose();
  });
});
