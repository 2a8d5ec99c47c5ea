import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createHub, FOG_A, provisionAgent } from '../fixtures/world.js';
import type { ApiClient } from '../support/client.js';
import { agentsSettled } from '../support/quiescent.js';
import { type HandshakeResult, heldLinkHandshake } from '../support/router-tls.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';
import type { ScriptedAgent } from '../support/scripted-agent.js';

/**
 * The rollout order of a change to both ends of a link: the hub moves to a new host while fog-a's
 * scripted Router rebuilds the moment it is told. Every step is checked with a real TLS handshake made
 * of the files each Router holds then and the connector fog-a's running Router dials with; the listening
 * side must hold a certificate for the new host before the dialer dials it. A silent hub holds fog-a
 * only for the bounded wait, and the topology says what fog-a waited for.
 */

const WAIT_SECONDS = 6;

let t: TestRuntime;
let api: ApiClient;
let hubUuid: string;
let hub: ScriptedAgent;
let fogA: ScriptedAgent;
let ports: { interRouterPort: number; edgeRouterPort: number };

const provision = (uuid: string) => provisionAgent(api, t.runtime.url, uuid);

const link = () => heldLinkHandshake(hub, `${hubUuid}-edge`, fogA, hubUuid);
const dialled = () =>
  (fogA.runningRouter?.config as { connectors?: Record<string, { host: string }> } | undefined)?.connectors?.[
    hubUuid
  ]?.host;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Until nothing is queued for hub and fog-a and neither has a change left to fetch. */
const settle = () => agentsSettled(t, [hub, fogA]);

beforeAll(async () => {
  t = await startTestRuntime({
    env: { LINK_ROLLOUT_WAIT_SECONDS: String(WAIT_SECONDS), AGENT_OFFLINE_AFTER_SECONDS: '3' },
  });
  api = t.api;
  hubUuid = await createHub(api);
  await createAgent(api, { ...FOG_A, tags: [] });
  hub = await provision(hubUuid);
  fogA = await provision('fog-a');
  await settle();
  const router = await api.get<{ interRouterPort: number; edgeRouterPort: number }>('/api/v3/router');
  ports = { interRouterPort: router.body.interRouterPort, edgeRouterPort: router.body.edgeRouterPort };
}, 180_000);

afterAll(async () => {
  await t?.stop();
});

describe('the hub moves to a new host', () => {
  it('fog-a dials the new host only once the hub holds a certificate for it: no handshake fails at any moment', async () => {
    // Prepare
    const starts = fogA.runningRouter!.starts;
    const seen: { step: string; dialled: string | undefined; result: HandshakeResult }[] = [];
    const check = async (step: string) => seen.push({ step, dialled: dialled(), result: await link() });

    // Act: fog-a polls (and rebuilds when told) every 200 ms; the hub, about every 2 s
    const put = await api.put('/api/v3/router', { host: 'hub2.example.com', ...ports });
    for (let tick = 0; tick < 60 && dialled() !== 'hub2.example.com'; tick++) {
      await fogA.poll();
      await check(`fog-a poll ${tick}`);
      if (tick % 10 === 9) {
        await hub.poll();
        await check(`hub poll ${tick}`);
      }
      await pause(200);
    }

    // Assess
    expect(put.status).toBe(200);
    expect(dialled()).toBe('hub2.example.com');
    expect(fogA.runningRouter!.starts).toBe(starts + 1);
    expect(seen.filter((entry) => !entry.result.ok)).toEqual([]);
    expect(seen.some((entry) => entry.dialled === 'hub2.example.com')).toBe(true);
    await settle();
    const topology = await api.get<{ sites: { key: string; rollout?: unknown }[] }>('/api/v3/topology');
    expect(topology.body.sites.find((site) => site.key === 'fog-a')?.rollout).toBeUndefined();
  });

  it('with the hub silent, fog-a is held, then told after the bounded wait; the topology says what it waited for', async () => {
    // Prepare
    const starts = fogA.runningRouter!.starts;

    // Act: only fog-a reports and polls
    const put = await api.put('/api/v3/router', { host: 'hub3.example.com', ...ports });
    const started = Date.now();
    const heldFor: number[] = [];
    const statesWhileHeld: string[] = [];
    while (dialled() !== 'hub3.example.com' && Date.now() - started < 60_000) {
      // fog-a is heard from and fetches what it is told: only the held rebuild keeps it from applied.
      await fogA.reportStatus();
      await fogA.poll();
      if (dialled() === 'hub2.example.com') {
        heldFor.push(Date.now() - started);
        const sites = (
          await api.get<{ sites: { key: string; state: string; rollout?: { toldAt?: string } }[] }>(
            '/api/v3/topology',
          )
        ).body.sites;
        const site = sites.find((entry) => entry.key === 'fog-a')!;
        // Once its rebuild is held (recorded on its site), and until it is told.
        if (site.rollout && !site.rollout.toldAt) statesWhileHeld.push(site.state);
      }
      await pause(300);
    }

    // Assess
    expect(put.status).toBe(200);
    expect(dialled()).toBe('hub3.example.com');
    expect(fogA.runningRouter!.starts).toBe(starts + 1);
    // Held for the bounded wait at least; its site never said applied while its rebuild was held.
    expect(Math.max(...heldFor)).toBeGreaterThanOrEqual(WAIT_SECONDS * 1000 - 1000);
    expect(statesWhileHeld.length).toBeGreaterThan(0);
    expect(statesWhileHeld.filter((state) => state === 'applied')).toEqual([]);
    const topology = await api.get<{
      sites: {
        key: string;
        rollout?: { upstreamName: string; reason: string; since: string; toldAt?: string };
      }[];
    }>('/api/v3/topology');
    const rollout = topology.body.sites.find((site) => site.key === 'fog-a')?.rollout;
    expect(rollout).toMatchObject({ upstream: hubUuid, upstreamName: 'hub' });
    expect(rollout!.reason).toMatch(/^it has not fetched its new certificate yet, and it is silent since /);
    expect(Date.parse(rollout!.toldAt!) - Date.parse(rollout!.since)).toBeGreaterThanOrEqual(
      WAIT_SECONDS * 1000,
    );
  });
});
