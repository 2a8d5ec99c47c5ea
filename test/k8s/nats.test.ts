import { rmSync } from 'node:fs';
import { decode } from '@nats-io/jwt';
import { fromSeed } from '@nats-io/nkeys';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintUserToken } from '../../infra/local/auth.js';
import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.js';
import { createCertificateAuthority } from '../../shared/domain/pki.js';
import { operatorTemplate } from '../fixtures/operator-skrouterd.js';
import { createAgent } from '../fixtures/world.js';
import { ApiClient } from '../support/client.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';
import { type KubeApiserver, startKubeApiserver } from './harness.js';
import { KubeClient } from './http.js';

/**
 * The NATS fabric's Kubernetes side against a real kube-apiserver: the operator's bootstrap call, its
 * `iofog-nats-config` routes and `iofog-nats-jwt-bundle` (fogbridge writes back into both), and the
 * `nats` StatefulSet it restarts when an agent server goes away. The test plays the operator: it creates
 * those objects, rewrites the ConfigMap the way iofog-operator does, and imports the fleet CAs.
 */
const NAMESPACE = 'iofog';
const poll = { timeout: 120_000, interval: 250 };
let kube: KubeApiserver;
let k8s: KubeClient;
let t: TestRuntime;
let api: ApiClient;
const restarted: LocalRuntime[] = [];

const CONFIGMAPS = `/api/v1/namespaces/${NAMESPACE}/configmaps`;
const NATS_CONFIG = `${CONFIGMAPS}/iofog-nats-config`;
const JWT_BUNDLE = `${CONFIGMAPS}/iofog-nats-jwt-bundle`;
const STATEFUL_SET = `/apis/apps/v1/namespaces/${NAMESPACE}/statefulsets/nats`;
/** An account key the operator's bundle held before fogbridge wrote (left as it is). */
const EARLIER_KEY = 'AEARLIERACCOUNTKEYHELDBYTHEBUNDLEBEFOREFOGBRIDGEWROTEAAAAA.jwt';

/** The operator's server.conf (iofog-operator controllers/controlplanes/nats/config.go), `replicas` pods. */
const operatorServerConf = (routes: string[]) => `port: 4222
server_name: $POD_NAME
http_port: 8222

cluster: {
  name: pot
  port: 6222
  no_advertise: true
  routes: [${routes.map((route) => JSON.stringify(route)).join(', ')}]
}
`;
const ordinals = (replicas: number) =>
  Array.from({ length: replicas }, (_, i) => `nats://nats-${i}.nats-headless:6222`);
const isOrdinal = (route: string) => /^nats:\/\/nats-\d+\.nats-headless:/.test(route);

async function routes(): Promise<string[]> {
  const { body } = await k8s.get<{ data: Record<string, string> }>(NATS_CONFIG);
  return JSON.parse(/routes:\s*(\[[^\]]*\])/.exec(body.data['server.conf']!)![1]!) as string[];
}
const agentRoutes = async () => (await routes()).filter((route) => !route.includes('nats-headless')).sort();

/**
 * The operator's rewrite of iofog-nats-config: parse its routes, keep the non-ordinal ones, re-create the
 * ordinals for `replicas` pods; `keepAgents: false` plays a reinstall that writes its template afresh.
 * Read, replace with the read resourceVersion, again on 409.
 */
async function operatorRewrite(replicas: number, keepAgents = true): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const { body } = await k8s.get<{ metadata: Record<string, unknown>; data: Record<string, string> }>(
      NATS_CONFIG,
    );
    const current = JSON.parse(/routes:\s*(\[[^\]]*\])/.exec(body.data['server.conf']!)![1]!) as string[];
    const kept = keepAgents ? [...new Set(current.filter((route) => !isOrdinal(route)))] : [];
    const response = await k8s.put(NATS_CONFIG, {
      ...body,
      data: { ...body.data, 'server.conf': operatorServerConf([...ordinals(replicas), ...kept]) },
    });
    if (response.status === 200) return;
    expect(response.status).toBe(409);
  }
  throw new Error('the operator rewrite kept conflicting');
}

const restartedAt = async () =>
  (
    await k8s.get<{ spec: { template: { metadata?: { annotations?: Record<string, string> } } } }>(
      STATEFUL_SET,
    )
  ).body.spec.template.metadata?.annotations?.['kubectl.kubernetes.io/restartedAt'];

const serverAgent = (name: string, host: string) => createAgent(api, { name, host, natsMode: 'server' });

beforeAll(async () => {
  kube = await startKubeApiserver();
  k8s = new KubeClient({ url: kube.url, token: kube.token, caFile: kube.caFile });
  const created = [
    await k8s.post('/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: NAMESPACE },
    }),
    await k8s.post(CONFIGMAPS, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'iofog-router' },
      data: { 'skrouterd.json': JSON.stringify(operatorTemplate(NAMESPACE)) },
    }),
    await k8s.post(CONFIGMAPS, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'iofog-nats-config' },
      data: { 'server.conf': operatorServerConf(ordinals(2)) },
    }),
    await k8s.post(CONFIGMAPS, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'iofog-nats-jwt-bundle' },
      data: { [EARLIER_KEY]: 'eyJearlier' },
    }),
    await k8s.post(`/apis/apps/v1/namespaces/${NAMESPACE}/statefulsets`, {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'nats' },
      spec: {
        serviceName: 'nats-headless',
        replicas: 2,
        selector: { matchLabels: { app: 'nats' } },
        template: {
          metadata: { labels: { app: 'nats' } },
          spec: { containers: [{ name: 'nats', image: 'ghcr.io/datasance/nats:2.15.0' }] },
        },
      },
    }),
  ];
  expect(created.map((response) => response.status)).toEqual([201, 201, 201, 201, 201]);
  // The operator's CA Secrets (all four fleet CAs), imported as the operator does.
  for (const name of ['router-site-ca', 'default-router-local-ca', 'nats-site-ca', 'default-nats-local-ca']) {
    const ca = await createCertificateAuthority(name);
    const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
    const secret = await k8s.post(`/api/v1/namespaces/${NAMESPACE}/secrets`, {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: { name },
      data: { 'tls.crt': b64(ca.certPem), 'tls.key': b64(ca.keyPem), 'ca.crt': b64(ca.certPem) },
    });
    expect(secret.status).toBe(201);
  }
  t = await startTestRuntime({
    env: {
      CONTROL_PLANE: 'kubernetes',
      CONTROLLER_NAMESPACE: NAMESPACE,
      CONTROLLER_NAME: 'pot',
      KUBECONFIG: kube.kubeconfigPath,
    },
  });
  api = t.api;
  for (const name of ['router-site-ca', 'default-router-local-ca', 'nats-site-ca', 'default-nats-local-ca']) {
    expect(
      (await api.post('/api/v3/certificates/ca', { name, type: 'k8s-secret', secretName: name })).status,
    ).toBe(201);
  }
  expect((await api.put('/api/v3/router', { host: 'router.iofog.example.com' })).status).toBe(200);
  expect((await api.put('/api/v3/nats/hub', { host: 'nats.iofog.example.com' })).status).toBe(200);
}, 1_800_000);

afterAll(async () => {
  if (restarted.length > 0) {
    for (const runtime of restarted) await runtime.stop();
    rmSync(t.dataDir, { recursive: true, force: true });
  } else {
    await t?.stop();
  }
  await kube?.stop();
});

type Bootstrap = {
  operatorJwt: string;
  operatorPublicKey: string;
  operatorSeed: string;
  systemAccountJwt: string;
  systemAccountPublicKey: string;
  sysUserCredsBase64: string;
};
let first: Bootstrap;

describe('the NATS bootstrap the operator calls', () => {
  it('answers the operator, the system account and the admin-hub creds, chained and made once', async () => {
    // Act
    const response = await api.get<Bootstrap>('/api/v3/nats/bootstrap');
    const again = await api.get<Bootstrap>('/api/v3/nats/bootstrap');

    // Assess
    expect(response.status).toBe(200);
    first = response.body;
    expect(Object.keys(first).sort()).toEqual([
      'operatorJwt',
      'operatorPublicKey',
      'operatorSeed',
      'sysUserCredsBase64',
      'systemAccountJwt',
      'systemAccountPublicKey',
    ]);
    expect(again.body).toEqual(first);
    expect(fromSeed(new TextEncoder().encode(first.operatorSeed)).getPublicKey()).toBe(
      first.operatorPublicKey,
    );
    expect(decode(first.operatorJwt)).toMatchObject({
      name: 'pot-operator',
      sub: first.operatorPublicKey,
      iss: first.operatorPublicKey,
    });
    expect(decode(first.systemAccountJwt)).toMatchObject({
      name: 'SYS',
      sub: first.systemAccountPublicKey,
      iss: first.operatorPublicKey,
    });
    const creds = Buffer.from(first.sysUserCredsBase64, 'base64').toString('utf8');
    const userJwt = /-----BEGIN NATS USER JWT-----\n(\S+)\n/.exec(creds)![1]!;
    expect(decode(userJwt)).toMatchObject({ name: 'admin-hub', iss: first.systemAccountPublicKey });
  });

  it('is 403 for a viewer', async () => {
    // Prepare
    const viewer = new ApiClient(
      t.runtime.url,
      await mintUserToken(t.dataDir, { role: 'viewer', subject: 'vera' }),
    );

    // Act
    const response = await viewer.get('/api/v3/nats/bootstrap');

    // Assess
    expect({ status: response.status, body: response.body }).toEqual({
      status: 403,
      body: { name: 'ForbiddenError', message: 'This request needs the admin role' },
    });
  });

  it('adds the system account to iofog-nats-jwt-bundle, a key it did not hold, keeping the others', async () => {
    // Act / Assess
    await expect
      .poll(async () => (await k8s.get<{ data: Record<string, string> }>(JWT_BUNDLE)).body.data, poll)
      .toEqual({
        [EARLIER_KEY]: 'eyJearlier',
        [`${first.systemAccountPublicKey}.jwt`]: first.systemAccountJwt,
      });
  });
});

describe("iofog-nats-config's cluster routes", () => {
  const uuids: Record<string, string> = {};

  it("appends every agent server's route after the operator's pods, without restarting them", async () => {
    // Act
    uuids['fog-s1'] = await serverAgent('fog-s1', '10.0.0.11');
    uuids['fog-s2'] = await serverAgent('fog-s2', '10.0.0.12');

    // Assess
    await expect.poll(agentRoutes, poll).toEqual(['nats://10.0.0.11:6222', 'nats://10.0.0.12:6222']);
    expect((await routes()).slice(0, 2)).toEqual(ordinals(2));
    expect(await restartedAt()).toBeUndefined();
    await expect
      .poll(
        async () =>
          (await api.get<{ platformStatus: unknown }>(`/api/v3/iofog/${uuids['fog-s1']}`)).body
            .platformStatus,
        poll,
      )
      .toEqual({ phase: 'ready', message: null });
  });

  it('keeps the agent routes through the operator rewriting the ConfigMap for three pods', async () => {
    // Act
    await operatorRewrite(3);

    // Assess: still so after the sweeper's next look at it
    await expect.poll(async () => (await routes()).slice(0, 3), poll).toEqual(ordinals(3));
    expect(await agentRoutes()).toEqual(['nats://10.0.0.11:6222', 'nats://10.0.0.12:6222']);
  });

  it('writes the agent routes back when an operator reinstall drops them', async () => {
    // Act
    await operatorRewrite(3, false);

    // Assess: the sweeper re-checks the write-back
    await expect.poll(agentRoutes, poll).toEqual(['nats://10.0.0.11:6222', 'nats://10.0.0.12:6222']);
    expect((await routes()).slice(0, 3)).toEqual(ordinals(3));
  });

  it("removes a deleted server's route and restarts the nats StatefulSet so its pods drop it", async () => {
    // Prepare
    const before = Date.now();

    // Act
    expect((await api.delete(`/api/v3/iofog/${uuids['fog-s2']}`)).status).toBe(204);

    // Assess
    await expect.poll(agentRoutes, poll).toEqual(['nats://10.0.0.11:6222']);
    await expect.poll(restartedAt, poll).toBeDefined();
    expect(Date.parse((await restartedAt())!)).toBeGreaterThanOrEqual(before - 1000);
  });

  it('loses no route when 20 agent servers are created at once while the operator rewrites', async () => {
    // Prepare
    const hosts = Array.from({ length: 20 }, (_, i) => `10.0.1.${i + 1}`);

    // Act
    const rewrites = (async () => {
      for (let i = 0; i < 5; i++) await operatorRewrite(3);
    })();
    await Promise.all(hosts.map((host, i) => serverAgent(`fog-c${i}`, host)));
    await rewrites;

    // Assess
    const expected = ['nats://10.0.0.11:6222', ...hosts.map((host) => `nats://${host}:6222`)].sort();
    await expect.poll(agentRoutes, poll).toEqual(expected);
    expect(new Set(await routes()).size).toBe((await routes()).length);
  });
});

describe('application accounts in iofog-nats-jwt-bundle', () => {
  type ConfigMap = { metadata: { resourceVersion: string }; data: Record<string, string> };
  const bundle = async () => (await k8s.get<ConfigMap>(JWT_BUNDLE)).body;
  const accountOf = async (application: string) =>
    (await api.get<{ publicKey: string; jwt: string }>(`/api/v3/nats/accounts/${application}`)).body;

  it("holds each application account's key beside the system account's and the operator's own", async () => {
    // Act
    expect(
      (await api.post('/api/v3/application', { name: 'orders', natsConfig: { natsAccess: true } })).status,
    ).toBe(201);
    const orders = await accountOf('orders');

    // Assess
    await expect
      .poll(async () => (await bundle()).data, poll)
      .toEqual({
        [EARLIER_KEY]: 'eyJearlier',
        [`${first.systemAccountPublicKey}.jwt`]: first.systemAccountJwt,
        [`${orders.publicKey}.jwt`]: orders.jwt,
      });
  });

  it('is not written by a second reconcile that finds it as it should be', async () => {
    // Prepare
    const settled = (await bundle()).metadata.resourceVersion;

    // Act: the bootstrap asks for a reconcile of the write-backs (nothing to change), then a new account
    // asks for another (one key to add); the two run in order
    expect((await api.get('/api/v3/nats/bootstrap')).status).toBe(200);
    expect(
      (await api.post('/api/v3/application', { name: 'billing', natsConfig: { natsAccess: true } })).status,
    ).toBe(201);
    const billing = await accountOf('billing');
    await expect.poll(async () => (await bundle()).data[`${billing.publicKey}.jwt`], poll).toBe(billing.jwt);

    // Assess: the ConfigMap's changes since, replayed by a watch from the settled version: billing's only
    const watch = await k8s.get<unknown>(
      `${CONFIGMAPS}?watch=true&fieldSelector=metadata.name%3Diofog-nats-jwt-bundle&resourceVersion=${settled}&timeoutSeconds=1`,
    );
    // One event arrives parsed (the whole answer is one JSON object); several as lines of text.
    const events = (typeof watch.body === 'string' ? watch.body : JSON.stringify(watch.body))
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; object: ConfigMap });
    expect(events.map((event) => [event.type, Object.keys(event.object.data).length])).toEqual([
      ['MODIFIED', 4],
    ]);
  });
});

describe('after a restart', () => {
  it('bootstraps with the same operator, account and user', async () => {
    // Prepare
    await t.runtime.stop();
    const second = await startLocalRuntime({
      host: '127.0.0.1',
      port: 0,
      dataDir: t.dataDir,
      env: {
        CONTROL_PLANE: 'kubernetes',
        CONTROLLER_NAMESPACE: NAMESPACE,
        CONTROLLER_NAME: 'pot',
        KUBECONFIG: kube.kubeconfigPath,
        LOG_LEVEL: 'ERROR',
      },
    });
    restarted.push(second);

    // Act
    const response = await new ApiClient(second.url, second.adminToken).get<Bootstrap>(
      '/api/v3/nats/bootstrap',
    );

    // Assess
    expect(response.status).toBe(200);
    expect(response.body).toEqual(first);
  });
});
