import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acknowledgeAgentChanges, reportAgentStatus } from '../../shared/commands/agent-protocol.js';
import { createImageRegistry } from '../../shared/commands/image-registries.js';
import { sitesOfService } from '../../shared/commands/service-sites.js';
import { readTopology } from '../../shared/commands/topology.js';
import { getServiceRow } from '../../shared/store/services.js';
import { changesOf, givenAgent, givenService } from './fleet.js';
import { newWorld, stopStore, type World } from './harness.js';

/**
 * A site's state through the reconcilers, as per-site status and the topology show it: a new agent is
 * `new` until its router's first config is written, never `applied` before it was heard from, and a
 * site told of a service stays pending until the agent acknowledges the change that carried it, even
 * when it acknowledges an unrelated change between the marking and the telling.
 */

let world: World;

beforeAll(async () => {
  world = await newWorld();
  await givenAgent(world, { name: 'hub', host: 'hub.example.com' });
  await world.settle();
}, 120_000);

afterAll(async () => {
  world?.dispose();
  await stopStore();
});

/** The agent acknowledges every change it was shown, as its changes worker does. */
async function acknowledge(uuid: string): Promise<void> {
  const { lastUpdated } = await changesOf(world, uuid);
  await world.run(() => acknowledgeAgentChanges(uuid, { lastUpdated }));
}

const stateInTopology = async (uuid: string) =>
  world.run(async () => {
    const topology = await readTopology({ form: 'full', limit: 100 });
    return topology.form === 'full' ? topology.sites.find((site) => site.key === uuid)?.state : undefined;
  });

const stateOfShop = async (uuid: string) =>
  world.run(async () => {
    const sites = await sitesOfService((await getServiceRow('shop'))!);
    return sites.notApplied.find((site) => site.agentUuid === uuid)?.state ?? 'applied';
  });

describe('a new agent', () => {
  it('is new until its first config is written, then not applied until heard from and acknowledged', async () => {
    // Act / Assess: created, nothing reconciled yet
    await givenAgent(world, { uuid: 'fog-n', name: 'fog-n', host: '10.0.0.21' });
    const created = await stateInTopology('fog-n');
    // Its first config written, never heard from
    await world.settle();
    const built = await stateInTopology('fog-n');
    // Heard from, not yet acknowledging
    await world.run(() => reportAgentStatus('fog-n', {}));
    const heard = await stateInTopology('fog-n');
    // Acknowledged what it was told
    await acknowledge('fog-n');
    const acknowledged = await stateInTopology('fog-n');

    expect([created, built, heard, acknowledged]).toEqual(['new', 'offline', 'pending', 'applied']);
  });
});

describe('a site told of a service', () => {
  it('stays pending when an unrelated change is acknowledged between the marking and the telling', async () => {
    // Prepare: fog-s selects shop, heard from, everything acknowledged
    await givenAgent(world, {
      uuid: 'fog-s',
      name: 'fog-s',
      host: '10.0.0.22',
      tags: ['service.iofog.org/tag: shop'],
    });
    await world.settle();
    await world.run(() => reportAgentStatus('fog-s', {}));
    await acknowledge('fog-s');

    // Act: the service reconcile marks fog-s and asks for it to be told; before it is, a registry is
    // created and fog-s acknowledges that change
    await givenService(world, {
      name: 'shop',
      type: 'external',
      resource: 'shop.example.com',
      targetPort: 443,
      tags: ['shop'],
    });
    await world.runQueued((sent) => sent.queue === 'service');
    await world.run(() =>
      createImageRegistry({
        url: 'registry.example.com',
        isPublic: true,
        username: '',
        password: '',
        email: '',
      }),
    );
    await acknowledge('fog-s');
    const beforeTold = await stateOfShop('fog-s');
    await world.settle();
    const told = await changesOf(world, 'fog-s');
    const afterTold = await stateOfShop('fog-s');
    const inTopology = await stateInTopology('fog-s');
    await acknowledge('fog-s');
    const afterAcknowledged = await stateOfShop('fog-s');

    // Assess
    expect(told.flags.microserviceConfig).toBe(true);
    expect([beforeTold, afterTold, inTopology, afterAcknowledged]).toEqual([
      'pending',
      'pending',
      'pending',
      'applied',
    ]);
  });
});
