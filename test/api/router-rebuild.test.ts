import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkoutYaml } from '../fixtures/seed-000.js';
import { createAgent, createHub, createSeedBackend, HUB, provisionAgent } from '../fixtures/world.js';
import { type ApiClient, eventually } from '../support/client.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';
import type { ScriptedAgent } from '../support/scripted-agent.js';

/**
 * What reaches a router that is already running. The scripted agent runs its router as Edgelet and the
 * Datasance Router do: the container is created from the first router item, recreated only when an
 * item says `rebuild` (or its image, environment, ports or network change), and the Router inside
 * applies nothing but `bridges` from a later config. A change outside `bridges` that fogbridge served
 * without `rebuild` would leave the running router where it was, and these tests would see it.
 */

const poll = { timeout: 60_000, interval: 200 };
let t: TestRuntime;
let api: ApiClient;
let hubUuid: string;
let hub: ScriptedAgent;
let fogA: ScriptedAgent;
/** An interior router under the hub (from the upstream test on). */
let fogI: ScriptedAgent;

type Config = {
  metadata?: { id: string; mode: string };
  listeners?: Record<string, { port: number; role: string; sslProfile?: string }>;
  connectors?: Record<string, { host: string; port: string; role: string; sslProfile: string }>;
  sslProfiles?: Record<string, { caCertFile: string; certFile?: string; privateKeyFile?: string }>;
  bridges?: { tcpListeners?: Record<string, unknown>; tcpConnectors?: Record<string, unknown> };
};

const provision = (uuid: string) => provisionAgent(api, t.runtime.url, uuid);

/** One tick of Edgelet's status and changes workers. */
async function tick(agent: ScriptedAgent) {
  await agent.reportStatus();
  return agent.poll();
}

/** Ticks until the agent's running router satisfies `wanted`; returns its config. */
async function runsWith(agent: ScriptedAgent, wanted: (config: Config) => boolean, what: string) {
  return eventually(
    async () => {
      await tick(agent);
      const config = agent.runningRouter?.config as Config | undefined;
      return config && wanted(config) ? config : undefined;
    },
    what,
    60_000,
  );
}

/** The router item as the controller serves it now, read without the agent acting on it. */
async function servedRouter(agent: ScriptedAgent) {
  const { microservices } = await agent.request('GET', 'microservices');
  const item = (microservices as Record<string, unknown>[]).find((entry) => entry.isRouter === true);
  return item
    ? { rebuild: item.rebuild as boolean, config: JSON.parse(item.config as string) as Config }
    : undefined;
}

/** Waits for a served item with `rebuild: true` whose config satisfies `wanted`. */
async function rebuildServed(agent: ScriptedAgent, wanted: (config: Config) => boolean, what: string) {
  return eventually(async () => {
    // The agents it dials poll meanwhile, as live agents do: a new link waits for them (rollout order).
    for (const upstream of [hub, fogI]) if (upstream && upstream !== agent) await tick(upstream);
    const item = await servedRouter(agent);
    return item?.rebuild && wanted(item.config) ? item : undefined;
  }, what);
}

const linkTo = (config: Config, key: string) => config.connectors?.[key];

beforeAll(async () => {
  t = await startTestRuntime({ env: { AGENT_OFFLINE_AFTER_SECONDS: '3' } });
  api = t.api;
  hubUuid = await createHub(api);
  await createSeedBackend(api);
  hub = await provision(hubUuid);
  fogA = await provision('fog-a');
  await runsWith(
    fogA,
    (config) => linkTo(config, hubUuid)?.host === HUB.host,
    "fog-a's running link to the hub",
  );
  await runsWith(hub, (config) => !!config.listeners?.[`${hubUuid}-edge`], "the hub's running edge listener");
}, 120_000);

afterAll(async () => {
  await t?.stop();
});

describe('changes outside bridges rebuild the router, until the agent acknowledges', () => {
  it("moving the hub (its agent's host) rebuilds fog-a's router, which then links to the new host; the hub itself is not rebuilt", async () => {
    // Prepare
    const starts = fogA.runningRouter!.starts;
    const hubStarts = hub.runningRouter!.starts;

    // Act
    expect((await api.patch(`/api/v3/iofog/${hubUuid}`, { host: 'hub2.example.com' })).status).toBe(204);

    // Assess: the hub fetches its certificate for the new name first (files only: the listening side
    // first); then fog-a is served with rebuild, held until it acknowledges, and its router runs the new link
    await eventually(async () => {
      await tick(hub);
      const site = [...hub.mounted.values()].find((mount) => mount.name === 'router-site-server-hub');
      const names = site ? new X509Certificate(site.files['tls.crt']!).subjectAltName : '';
      return names?.includes('DNS:hub2.example.com') ? true : undefined;
    }, 'the hub holding its certificate for hub2.example.com');
    const served = await rebuildServed(
      fogA,
      (config) => linkTo(config, hubUuid)?.host === 'hub2.example.com',
      'a rebuild of fog-a with the new hub host',
    );
    expect(served.config.connectors?.[hubUuid]).toMatchObject({ role: 'edge', port: '45671' });
    expect((await servedRouter(fogA))?.rebuild).toBe(true);
    expect((await api.get<{ router: unknown }>('/api/v3/iofog/fog-a')).body.router).toMatchObject({
      rebuildPending: true,
    });
    const config = await runsWith(
      fogA,
      (running) => linkTo(running, hubUuid)?.host === 'hub2.example.com',
      'fog-a running the new link',
    );
    expect(config.metadata).toEqual({ id: 'fog-a', mode: 'edge', helloMaxAgeSeconds: '3' });
    expect(fogA.runningRouter!.starts).toBe(starts + 1);
    await expect.poll(async () => (await servedRouter(fogA))?.rebuild, poll).toBe(false);
    const agent = (await api.get<{ router: Record<string, unknown> }>('/api/v3/iofog/fog-a')).body.router;
    expect(agent.rebuildPending).toBe(false);
    expect(agent.acknowledgedVersion).toBeGreaterThanOrEqual(agent.configVersion as number);
    // The hub's own certificate is reissued (new name): its files are reloaded, no rebuild
    await tick(hub);
    expect((await servedRouter(hub))?.rebuild).toBe(false);
    expect(hub.runningRouter!.starts).toBe(hubStarts);
  });

  it('changing an agent’s upstream routers rebuilds it onto the new link', async () => {
    // Prepare: an interior router fog-i under the hub, running
    await createAgent(api, { uuid: 'fog-i', name: 'fog-i', host: '10.0.0.20', routerMode: 'interior' });
    fogI = await provision('fog-i');
    await runsWith(
      fogI,
      (config) => config.metadata?.mode === 'interior' && !!linkTo(config, hubUuid),
      'fog-i',
    );
    const starts = fogA.runningRouter!.starts;

    // Act
    expect((await api.patch('/api/v3/iofog/fog-a', { upstreamRouters: ['fog-i'] })).status).toBe(204);

    // Assess: fog-i, the listening side, keeps polling as a live agent does (fog-a's new link waits
    // for it to have acknowledged its side)
    await eventually(async () => {
      await tick(fogI);
      const item = await servedRouter(fogA);
      return item?.rebuild && linkTo(item.config, 'fog-i') ? item : undefined;
    }, 'a rebuild of fog-a linking to fog-i');
    const config = await runsWith(
      fogA,
      (running) => !!linkTo(running, 'fog-i'),
      'fog-a running its link to fog-i',
    );
    expect(Object.keys(config.connectors ?? {})).toEqual(['fog-i']);
    expect(config.connectors?.['fog-i']).toMatchObject({ host: '10.0.0.20', port: '45671', role: 'edge' });
    expect(fogA.runningRouter!.starts).toBe(starts + 1);
  });

  it("changing an interior router's edge port rebuilds it and every router dialing that port", async () => {
    // Prepare
    await runsWith(fogI, (config) => config.metadata?.mode === 'interior', 'fog-i running');
    await runsWith(fogA, (config) => !!linkTo(config, 'fog-i'), 'fog-a linked to fog-i');
    const [starts, iStarts] = [fogA.runningRouter!.starts, fogI.runningRouter!.starts];

    // Act
    expect((await api.patch('/api/v3/iofog/fog-i', { edgeRouterPort: 45999 })).status).toBe(204);

    // Assess
    const iConfig = await runsWith(
      fogI,
      (config) => config.listeners?.['fog-i-edge']?.port === 45999,
      'fog-i running its edge listener on the new port',
    );
    expect(iConfig.listeners?.['fog-i-edge']).toMatchObject({ role: 'edge', port: 45999 });
    expect(fogI.runningRouter!.item.portMappings.map((port) => port.internal)).toContain(45999);
    const aConfig = await runsWith(
      fogA,
      (config) => linkTo(config, 'fog-i')?.port === '45999',
      'fog-a dialing the new port',
    );
    expect(aConfig.connectors?.['fog-i']?.host).toBe('10.0.0.20');
    expect(fogI.runningRouter!.starts).toBeGreaterThan(iStarts);
    expect(fogA.runningRouter!.starts).toBe(starts + 1);
  });

  it('changing the router mode rebuilds the router as the new mode, on the host network', async () => {
    // Prepare
    await createAgent(api, { uuid: 'fog-m', name: 'fog-m', host: '10.0.0.30', routerMode: 'edge' });
    const fogM = await provision('fog-m');
    await runsWith(
      fogM,
      (config) => config.metadata?.mode === 'edge' && !!linkTo(config, hubUuid),
      'fog-m as edge',
    );
    const starts = fogM.runningRouter!.starts;

    // Act
    expect((await api.patch('/api/v3/iofog/fog-m', { routerMode: 'interior' })).status).toBe(204);

    // Assess
    await rebuildServed(
      fogM,
      (served) => served.metadata?.mode === 'interior',
      'a rebuild of fog-m as interior',
    );
    const config = await runsWith(
      fogM,
      (running) => running.metadata?.mode === 'interior',
      'fog-m as interior',
    );
    expect(config.listeners?.['fog-m-inter-router']).toMatchObject({ role: 'inter-router', port: 55671 });
    expect(config.listeners?.['fog-m-edge']).toMatchObject({ role: 'edge', port: 45671 });
    expect(linkTo(config, hubUuid)).toMatchObject({ role: 'inter-router', port: '55671' });
    expect(fogM.runningRouter!.item.hostNetworkMode).toBe(true);
    expect(fogM.runningRouter!.starts).toBe(starts + 1);
  });
});

describe('a service lifecycle never rebuilds a router', () => {
  it('create, change its target port and tags, delete: every router item is served without rebuild and applied live', async () => {
    // Prepare
    await runsWith(fogA, () => true, 'fog-a settled');
    const starts = { fogA: fogA.runningRouter!.starts, hub: hub.runningRouter!.starts };
    const rebuilds: string[] = [];
    const watch = async (step: string) => {
      for (const [name, agent] of [
        ['fog-a', fogA],
        ['hub', hub],
      ] as const) {
        const served = await servedRouter(agent);
        if (served?.rebuild) rebuilds.push(`${name} after ${step}`);
        await tick(agent);
      }
    };
    const running = (agent: ScriptedAgent) => agent.runningRouter!.config as Config;

    // Act and Assess, step by step
    expect((await api.postYaml('/api/v3/services/yaml', checkoutYaml)).status).toBe(201);
    await eventually(async () => {
      await watch('create');
      return running(fogA).bridges?.tcpListeners?.['checkout-listener'] &&
        running(fogA).bridges?.tcpConnectors?.['checkout-connector'] &&
        running(hub).bridges?.tcpListeners?.['checkout-listener']
        ? true
        : undefined;
    }, 'checkout on fog-a and the hub');
    expect((await api.patch('/api/v3/services/checkout', { targetPort: 9090 })).status).toBe(204);
    await eventually(async () => {
      await watch('target port');
      const connector = running(fogA).bridges?.tcpConnectors?.['checkout-connector'] as { port?: string };
      return connector?.port === '9090' ? true : undefined;
    }, 'the new target port on fog-a');
    expect((await api.patch('/api/v3/services/checkout', { tags: ['elsewhere'] })).status).toBe(204);
    await eventually(async () => {
      await watch('tags');
      return running(fogA).bridges?.tcpListeners?.['checkout-listener'] ? undefined : true;
    }, 'the listener gone from fog-a');
    expect((await api.delete('/api/v3/services/checkout')).status).toBe(204);
    await eventually(async () => {
      await watch('delete');
      return running(fogA).bridges?.tcpConnectors?.['checkout-connector'] ||
        running(hub).bridges?.tcpListeners?.['checkout-listener']
        ? undefined
        : true;
    }, 'checkout gone from fog-a and the hub');

    // Assess
    expect(rebuilds).toEqual([]);
    expect({ fogA: fogA.runningRouter!.starts, hub: hub.runningRouter!.starts }).toEqual(starts);
  });
});

describe('an agent provisioned at once', () => {
  it('gets no router item, or one whose config a Router can run, on its first pull; and then a running router', async () => {
    for (const name of ['fast-1', 'fast-2', 'fast-3']) {
      // Act: create, take a key and provision with no pause, then pull as Edgelet's first tick does
      const uuid = await createAgent(api, { name, host: '10.0.1.1' });
      const agent = await provision(uuid);
      const first = await servedRouter(agent);

      // Assess
      if (first) {
        expect(first.config.metadata).toMatchObject({ id: uuid, mode: 'edge' });
        expect(Object.values(first.config.listeners ?? {}).some((listener) => listener.port === 5672)).toBe(
          true,
        );
        expect(linkTo(first.config, hubUuid)).toBeDefined();
        await agent.loadVolumeMounts();
        const router = (await agent.loadMicroservices()).find((microservice) => microservice.isRouter)!;
        for (const link of Object.values(first.config.connectors ?? {})) {
          const profile = first.config.sslProfiles?.[link.sslProfile];
          expect(agent.containerFile(router, profile!.certFile!)).toMatch(/^-----BEGIN /);
        }
      }
      const running = await runsWith(agent, (config) => !!linkTo(config, hubUuid), `${name} running`);
      expect(running.metadata).toMatchObject({ id: uuid, mode: 'edge' });
      expect(running.listeners?.[`${uuid}-amqp`]).toMatchObject({ port: 5672, role: 'normal' });
      expect(agent.runningRouter!.starts).toBe(1);
    }
  });
});

describe('per-site status of a service', () => {
  type Sites = { expected: number; applied: number; pending: number; offline: number };
  type Site = { agentUuid: string; state: string; roles: string[]; since: string | null };

  it('counts the sites that applied it, shows a silent agent pending then offline, and all once it acknowledges', async () => {
    // Prepare: three agents tagged for "status", provisioned and running
    const names = ['site-1', 'site-2', 'site-3'];
    const agents: ScriptedAgent[] = [];
    for (const name of names) {
      const uuid = await createAgent(api, {
        name,
        host: '10.0.2.1',
        tags: ['service.iofog.org/tag: status'],
      });
      agents.push(await provision(uuid));
    }
    for (const agent of agents) await runsWith(agent, (config) => !!linkTo(config, hubUuid), 'running');
    // The hub holds the service's hub listener: a fourth site, polling with the two live ones.
    const [silent, ...tagged] = agents as [ScriptedAgent, ScriptedAgent, ScriptedAgent];
    const live = [hub, ...tagged];

    // Act: the service; two agents keep polling, one only reports its status
    const created = await api.post('/api/v3/services', {
      name: 'status-svc',
      type: 'external',
      resource: 'status.example.com',
      targetPort: 443,
      tags: ['status'],
    });
    expect(created.status).toBe(201);
    const sites = async () =>
      (await api.get<{ sites: Sites & { notApplied: Site[] } }>('/api/v3/services/status-svc')).body.sites;
    const pending = await eventually(async () => {
      for (const agent of live) await tick(agent);
      // Heard from but not applying: it reports its status and never pulls its changes, so it is
      // pending however long the others take (offline comes once it stops reporting too).
      await silent.reportStatus();
      const now = await sites();
      return now.applied === 3 && now.pending === 1 ? now : undefined;
    }, 'three sites applied, one pending');

    // Assess: pending, then offline once it has been silent past the threshold
    expect(pending).toMatchObject({ expected: 4, applied: 3, pending: 1, offline: 0 });
    expect(pending.notApplied).toEqual([
      expect.objectContaining({
        agentUuid: silent.uuid,
        name: 'site-1',
        roles: ['listener'],
        state: 'pending',
      }),
    ]);
    expect(pending.notApplied[0]!.since).toEqual(expect.any(String));
    const offline = await eventually(async () => {
      for (const agent of live) await agent.reportStatus();
      const now = await sites();
      return now.offline === 1 ? now : undefined;
    }, 'the silent agent offline');
    expect(offline).toMatchObject({ expected: 4, applied: 3, pending: 0, offline: 1 });
    const listed = await api.get<{ name: string; sites: Sites }[]>('/api/v3/services');
    expect(listed.body.find((service) => service.name === 'status-svc')?.sites).toEqual({
      expected: 4,
      applied: 3,
      pending: 0,
      offline: 1,
    });
    const page = await api.get<{ sites: Site[]; next?: string }>('/api/v3/services/status-svc/sites?limit=2');
    expect(page.body.sites).toHaveLength(2);
    expect(page.body.next).toBe(page.body.sites[1]!.agentUuid);
    const rest = await api.get<{ sites: Site[]; next?: string }>(
      `/api/v3/services/status-svc/sites?limit=2&after=${page.body.next}`,
    );
    expect(rest.body.next).toBeUndefined();
    expect(rest.body.sites).toHaveLength(2);
    expect(
      [...page.body.sites, ...rest.body.sites].map((site) => [site.agentUuid, site.roles, site.state]).sort(),
    ).toEqual(
      [
        // An external service's connector is on the hub too.
        [hubUuid, ['hub', 'connector'], 'applied'],
        [silent.uuid, ['listener'], 'offline'],
        ...tagged.map((agent) => [agent.uuid, ['listener'], 'applied']),
      ].sort(),
    );

    // Act: the silent agent comes back, polls and acknowledges
    await tick(silent);

    // Assess
    await expect
      .poll(sites, poll)
      .toEqual({ expected: 4, applied: 4, pending: 0, offline: 0, notApplied: [] });
    expect(Object.keys((silent.runningRouter!.config as Config).bridges?.tcpListeners ?? {})).toContain(
      'status-svc-listener',
    );
  });

  it('refuses a bad page size with a 400 naming the parameter and the value', async () => {
    // Act
    const response = await api.get('/api/v3/services/status-svc/sites?limit=0');

    // Assess
    expect(response.status).toBe(400);
    expect(response.body).toEqual({
      name: 'ValidationError',
      message: 'Query parameter \'limit\' must be at least 1, got "0"',
    });
  });
});
