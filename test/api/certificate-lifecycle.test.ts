import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweep } from '../../shared/reconcile/sweeper.js';
import { createAgent, createHub, FOG_A, provisionAgent } from '../fixtures/world.js';
import type { ApiClient } from '../support/client.js';
import { agentsSettled, routersQuiescent } from '../support/quiescent.js';
import { handshake, heldFiles, heldLinkHandshake } from '../support/router-tls.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';
import type { ScriptedAgent } from '../support/scripted-agent.js';

/**
 * A fleet's certificates over its lifetime, as its Routers hold them: the fleet is made 59 months in
 * the past (the runtime's clock runs behind), the clock moves to now, and the next sweep renews every
 * leaf; then the router CA is rotated. At every step (and between any one agent's poll and the
 * other's) the link between the hub and fog-a is checked with a real TLS handshake made of the files
 * each scripted Router holds at that moment, with the profiles its running config started with.
 */

const DAY_MS = 86_400_000;
const MONTH_MS = 30.44 * DAY_MS;
const FLEET_CAS = ['router-site-ca', 'default-router-local-ca', 'nats-site-ca', 'default-nats-local-ca'];

interface Listed {
  name: string;
  isCA: boolean;
  serialNumber: string;
  validTo: string;
  caName: string | null;
}

let t: TestRuntime;
let api: ApiClient;
let clockOffset = -59 * MONTH_MS;
let hubUuid: string;
let hub: ScriptedAgent;
let fogA: ScriptedAgent;
/** fog-a's site files before the rotation: a leaf the old CA signed. */
let preRotation: Record<string, string>;

const provision = (uuid: string) => provisionAgent(api, t.runtime.url, uuid);

/** The link fog-a dials to the hub, each end with what its Router holds now. */
const link = () => heldLinkHandshake(hub, `${hubUuid}-edge`, fogA, hubUuid);

/** Until nothing is queued for hub and fog-a and neither has a change left to fetch. */
const settle = () => agentsSettled(t, [hub, fogA]);

/** The agents' own certificates (router and NATS), by name. */
async function agentLeaves(): Promise<Map<string, Listed>> {
  const { body } = await api.get<{ certificates: Listed[] }>('/api/v3/certificates');
  return new Map(
    body.certificates
      .filter((entry) => !entry.isCA && entry.caName && FLEET_CAS.includes(entry.caName))
      .map((entry) => [entry.name, entry]),
  );
}

/** fog-a's site certificate's place in the router CA's rotation, as the topology shows it. */
const progressOfFogA = async () =>
  (
    await api.get<{ sites: { key: string; caRotation?: { certificate: string }[] }[] }>('/api/v3/topology')
  ).body.sites
    .find((site) => site.key === 'fog-a')
    ?.caRotation?.find((entry) => entry.certificate === 'router-site-server-fog-a');

const rotationOf = async (name: string) =>
  (await api.get<{ rotation?: { phase: string } }>(`/api/v3/certificates/ca/${name}`)).body.rotation?.phase ??
  'none';

beforeAll(async () => {
  t = await startTestRuntime({
    clock: () => Date.now() + clockOffset,
    env: { CERTIFICATE_RENEW_BEFORE_DAYS: '45' },
  });
  api = t.api;
  // The operator's fleet CAs, for ten years.
  for (const name of FLEET_CAS) {
    const created = await api.post('/api/v3/certificates/ca', {
      name,
      subject: name,
      expiration: 120,
      type: 'self-signed',
    });
    expect(created.status, created.text).toBe(201);
  }
  hubUuid = await createHub(api);
  await createAgent(api, { ...FOG_A, tags: [] });
  hub = await provision(hubUuid);
  fogA = await provision('fog-a');
  await settle();
}, 180_000);

afterAll(async () => {
  await t?.stop();
});

describe('a fleet 59 months old', () => {
  it('links hub and fog-a with the certificates issued then', async () => {
    // Act
    const result = await link();

    // Assess
    expect(result).toEqual({ ok: true, clientSubject: 'fog-a' });
    const leaves = await agentLeaves();
    expect(leaves.size).toBeGreaterThanOrEqual(8);
    for (const leaf of leaves.values())
      expect(Date.parse(leaf.validTo) - (Date.now() + clockOffset)).toBeLessThan(61 * MONTH_MS);
  });

  it('moved to now, the next sweep renews every leaf; each Router reloads them without a rebuild, and the link holds at every step', async () => {
    // Prepare
    const before = await agentLeaves();
    const starts = [hub.runningRouter!.starts, fogA.runningRouter!.starts];
    clockOffset = 0;

    // Act
    await t.inRuntime(() => sweep({ full: false }));

    // Assess
    const after = await agentLeaves();
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    for (const [name, leaf] of after) {
      expect(leaf.serialNumber, name).not.toBe(before.get(name)!.serialNumber);
      expect(Date.parse(leaf.validTo) - Date.now(), name).toBeGreaterThan(59 * MONTH_MS);
    }
    expect(await link()).toMatchObject({ ok: true });
    await routersQuiescent(t, [hubUuid, 'fog-a']);
    expect((await hub.changes()).flags).toMatchObject({ volumeMounts: true, microserviceList: false });
    await hub.poll();
    expect(await link()).toMatchObject({ ok: true });
    await fogA.poll();
    expect(await link()).toMatchObject({ ok: true });
    await settle();
    expect([hub.runningRouter!.starts, fogA.runningRouter!.starts]).toEqual(starts);
    const held = [...hub.mounted.values()].find((mount) => mount.name === 'router-site-server-hub');
    expect(new X509Certificate(held!.files['tls.crt']!).serialNumber).toBe(
      after.get('router-site-server-hub')!.serialNumber,
    );
  });
});

describe('a CA rotation, phase by phase', () => {
  it('the new CA joins every trust file first; the rotation waits until both sites have it', async () => {
    // Prepare
    const oldCa = (await api.get<{ data: { certificate: string } }>('/api/v3/certificates/ca/router-site-ca'))
      .body.data.certificate;
    preRotation = {
      ...[...fogA.mounted.values()].find((mount) => mount.name === 'router-site-server-fog-a')!.files,
    };

    // Act
    const rotated = await api.post('/api/v3/certificates/ca/router-site-ca/rotate', {});

    // Assess
    expect(rotated.status, rotated.text).toBe(202);
    expect(rotated.body).toMatchObject({ name: 'router-site-ca', phase: 'trust' });
    await routersQuiescent(t, [hubUuid, 'fog-a']);
    expect(await link()).toMatchObject({ ok: true });
    await hub.poll();
    expect(await link()).toMatchObject({ ok: true });
    // fog-a has not fetched its new trust file: the leaves stay with the old CA.
    await t.inRuntime(() => sweep({ full: false }));
    expect(await rotationOf('router-site-ca')).toBe('trust');
    expect(await progressOfFogA()).toEqual({
      certificate: 'router-site-server-fog-a',
      ca: 'router-site-ca',
      signedBy: 'old',
      trusts: ['new', 'old'],
    });
    const hubTrust = [...hub.mounted.values()].find((mount) => mount.name === 'router-site-server-hub')!
      .files['ca.crt']!;
    expect(hubTrust).toContain(oldCa.trim());
    expect(hubTrust.match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
    await fogA.poll();
    expect(await link()).toMatchObject({ ok: true });
    await settle();
  });

  it('then leaves are reissued under the new CA, each side accepting the other at every step', async () => {
    // Prepare
    const before = await agentLeaves();

    // Act
    await t.inRuntime(() => sweep({ full: false }));

    // Assess
    expect(await rotationOf('router-site-ca')).toBe('reissue');
    await routersQuiescent(t, [hubUuid, 'fog-a']);
    const after = await agentLeaves();
    const siteLeaf = 'router-site-server-hub';
    expect(after.get(siteLeaf)!.serialNumber).not.toBe(before.get(siteLeaf)!.serialNumber);
    expect(await progressOfFogA()).toMatchObject({ signedBy: 'new', trusts: ['new', 'old'] });
    expect(after.get('nats-site-server-fog-a')?.serialNumber ?? 'none').toBe(
      before.get('nats-site-server-fog-a')?.serialNumber ?? 'none',
    );
    expect(await link()).toMatchObject({ ok: true });
    await hub.poll();
    expect(await link()).toMatchObject({ ok: true });
    await fogA.poll();
    expect(await link()).toMatchObject({ ok: true });
    await settle();
  });

  it('last, the old CA leaves the trust files: a leaf it signed is refused, the new ones link', async () => {
    // Act
    await t.inRuntime(() => sweep({ full: false }));

    // Assess
    expect(await rotationOf('router-site-ca')).toBe('none');
    await routersQuiescent(t, [hubUuid, 'fog-a']);
    expect(await progressOfFogA()).toBeUndefined();
    await routersQuiescent(t, [hubUuid, 'fog-a']);
    expect(await link()).toMatchObject({ ok: true });
    await hub.poll();
    expect(await link()).toMatchObject({ ok: true });
    await fogA.poll();
    expect(await link()).toEqual({ ok: true, clientSubject: 'fog-a' });
    const newCa = (await api.get<{ data: { certificate: string } }>('/api/v3/certificates/ca/router-site-ca'))
      .body.data.certificate;
    const running = hub.runningRouter!.config as { listeners: Record<string, { sslProfile: string }> };
    const hubFiles = heldFiles(hub, running.listeners[`${hubUuid}-edge`]!.sslProfile);
    expect(hubFiles.ca.trim()).toBe(newCa.trim());
    const stale = await handshake(
      hubFiles,
      { ca: preRotation['ca.crt']!, cert: preRotation['tls.crt']!, key: preRotation['tls.key']! },
      'hub.example.com',
    );
    expect(stale.ok).toBe(false);
  });
});
