import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { armFault, disarmFaults } from '../../shared/faults.js';
import { type Entry, operatorMerge, operatorTemplate } from '../fixtures/operator-skrouterd.js';
import { checkoutKubernetesYaml } from '../fixtures/seed-000.js';
import { createSeedBackend } from '../fixtures/world.js';
import { type ApiClient, eventually } from '../support/client.js';
import { opensslCa } from '../support/openssl-ca.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';
import { ScriptedAgent } from '../support/scripted-agent.js';
import { type KubeApiserver, startKubeApiserver } from './harness.js';
import { KubeClient } from './http.js';

/**
 * The Kubernetes control plane against a real kube-apiserver: the operator's hub ConfigMap, the
 * Kubernetes Services, LoadBalancer ingress. The test plays the operator (it seeds and rewrites the
 * ConfigMap) and the cloud controller (it writes status.loadBalancer.ingress).
 */
const NAMESPACE = 'iofog';
const poll = { timeout: 120_000, interval: 200 };
let kube: KubeApiserver;
let k8s: KubeClient;
let t: TestRuntime;
let api: ApiClient;

type Service = {
  name: string;
  provisioningStatus: string;
  provisioningError: string | null;
  bridgePort: number;
  serviceEndpoint: string | null;
};
type KubeService = {
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    annotations?: Record<string, string>;
    resourceVersion: string;
  };
  spec: {
    type: string;
    selector: Record<string, string>;
    ports: { name: string; port: number; targetPort: number; protocol: string }[];
  };
  status?: { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } };
};

const CONFIGMAP = `/api/v1/namespaces/${NAMESPACE}/configmaps/iofog-router`;
const kubeService = (name: string) => `/api/v1/namespaces/${NAMESPACE}/services/${name}`;
const service = async (name: string) => (await api.get<Service>(`/api/v3/services/${name}`)).body;
const status = async (name: string) => {
  const row = await service(name);
  return { status: row.provisioningStatus, error: row.provisioningError };
};

async function hubEntries(): Promise<Entry[]> {
  const { body } = await k8s.get<{ data: Record<string, string> }>(CONFIGMAP);
  return JSON.parse(body.data['skrouterd.json']!) as Entry[];
}

/** The operator's rewrite: read, merge its template, replace with the read resourceVersion; on 409 again. */
async function operatorRewrite(configVersion: string) {
  for (let attempt = 0; attempt < 20; attempt++) {
    const { body } = await k8s.get<{ metadata: Record<string, unknown>; data: Record<string, string> }>(
      CONFIGMAP,
    );
    const merged = operatorMerge(
      JSON.parse(body.data['skrouterd.json']!) as Entry[],
      operatorTemplate(NAMESPACE, configVersion),
    );
    const response = await k8s.put(CONFIGMAP, {
      ...body,
      data: { ...body.data, 'skrouterd.json': JSON.stringify(merged) },
    });
    if (response.status === 200) return;
    expect(response.status).toBe(409);
  }
  throw new Error('the operator rewrite kept conflicting');
}

/** The cloud controller's part: give a LoadBalancer Service its ingress. */
async function assignIngress(name: string, ingress: { ip?: string; hostname?: string }) {
  await expect.poll(async () => (await k8s.get(kubeService(name))).status, poll).toBe(200);
  const { body } = await k8s.get<KubeService>(kubeService(name));
  const response = await k8s.put(`${kubeService(name)}/status`, {
    ...body,
    status: { loadBalancer: { ingress: [ingress] } },
  });
  expect(response.status).toBe(200);
}

const manifestView = (manifest: KubeService) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: {
    name: manifest.metadata.name,
    namespace: manifest.metadata.namespace,
    labels: manifest.metadata.labels,
    annotations: manifest.metadata.annotations ?? {},
  },
  spec: {
    type: manifest.spec.type,
    selector: manifest.spec.selector,
    ports: manifest.spec.ports.map(({ name, port, targetPort, protocol }) => ({
      name,
      port,
      targetPort,
      protocol,
    })),
  },
});

beforeAll(async () => {
  kube = await startKubeApiserver();
  k8s = new KubeClient({ url: kube.url, token: kube.token, caFile: kube.caFile });
  expect(
    (
      await k8s.post('/api/v1/namespaces', {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: NAMESPACE },
      })
    ).status,
  ).toBe(201);
  const seeded = await k8s.post(`/api/v1/namespaces/${NAMESPACE}/configmaps`, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'iofog-router', namespace: NAMESPACE },
    data: { 'skrouterd.json': JSON.stringify(operatorTemplate(NAMESPACE)) },
  });
  expect(seeded.status).toBe(201);
  t = await startTestRuntime({
    env: {
      CONTROL_PLANE: 'kubernetes',
      CONTROLLER_NAMESPACE: NAMESPACE,
      CONTROLLER_NAME: 'pot',
      KUBECONFIG: kube.kubeconfigPath,
      LOADBALANCER_POLL_ATTEMPTS: '10',
      LOADBALANCER_POLL_INTERVAL_MS: '300',
    },
  });
  api = t.api;
  expect((await api.put('/api/v3/router', { host: 'router.example.com' })).status).toBe(200);
  await createSeedBackend(api, []);
}, 1_800_000);

afterEach(() => {
  disarmFaults();
});

afterAll(async () => {
  await t?.stop();
  await kube?.stop();
});

describe('the hub ConfigMap iofog-router', () => {
  it('holds the seed skrouterd.json entries for a k8s service after every operator entry, in order', async () => {
    // Act: the seed's "Kubernetes hub file" pairs a checkout listener with a connector to payments
    const created = await api.postYaml(
      '/api/v3/services/yaml',
      `apiVersion: iofog.org/v3
kind: Service
metadata:
  name: checkout
spec:
  type: k8s
  resource: payments.payments.svc.cluster.local
  targetPort: 8080
  defaultBridge: default-router
`,
    );

    // Assess
    expect(created.status).toBe(201);
    await expect.poll(() => status('checkout'), poll).toEqual({ status: 'ready', error: null });
    expect(await hubEntries()).toEqual([
      ...operatorTemplate(NAMESPACE),
      ['tcpListener', { name: 'checkout-listener', port: '10024', address: 'checkout' }],
      [
        'tcpConnector',
        {
          name: 'checkout-connector',
          host: 'payments.payments.svc.cluster.local',
          port: '8080',
          address: 'checkout',
          processId: 'payments.payments.svc.cluster.local-k8s-8080',
        },
      ],
    ]);
    expect((await k8s.get(kubeService('checkout'))).status).toBe(404);
    expect((await api.get('/api/v3/router/hub-config')).body).toEqual(await hubEntries());
  });

  it('removes both entries on delete and leaves the operator document as it was', async () => {
    // Act
    expect((await api.delete('/api/v3/services/checkout')).status).toBe(204);

    // Assess
    await expect.poll(hubEntries, poll).toEqual(operatorTemplate(NAMESPACE));
  });
});

describe('the Kubernetes Service of a microservice', () => {
  it('is the seed worked object for checkout (bridgePort 10024, controller pot), read back from the apiserver', async () => {
    // Act
    const created = await api.postYaml('/api/v3/services/yaml', checkoutKubernetesYaml);
    expect(created.status).toBe(201);
    await assignIngress('checkout', { ip: '198.51.100.20' });

    // Assess
    await expect.poll(() => status('checkout'), poll).toEqual({ status: 'ready', error: null });
    expect((await service('checkout')).serviceEndpoint).toBe('198.51.100.20');
    const { body } = await k8s.get<KubeService>(kubeService('checkout'));
    expect(manifestView(body)).toEqual({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name: 'checkout',
        namespace: NAMESPACE,
        labels: {
          'app.kubernetes.io/name': 'iofog',
          'app.kubernetes.io/component': 'controller',
          'app.kubernetes.io/managed-by': 'controller',
          'app.kubernetes.io/instance': 'pot',
          'datasance.com/component': 'router',
        },
        annotations: {
          checkout: '',
          'service.beta.kubernetes.io/aws-load-balancer-type': 'nlb',
        },
      },
      spec: {
        type: 'LoadBalancer',
        selector: { 'datasance.com/component': 'router' },
        ports: [{ name: 'iofog-service', port: 80, targetPort: 10024, protocol: 'TCP' }],
      },
    });
    // On Kubernetes the microservice connector still goes to its agent's router, not to the ConfigMap
    const hub = await hubEntries();
    expect(hub.filter(([type]) => type === 'tcpConnector')).toEqual([]);
    expect(hub).toContainEqual([
      'tcpListener',
      { name: 'checkout-listener', port: '10024', address: 'checkout' },
    ]);
  });

  it('replaces the whole annotation map when tags change', async () => {
    // Act
    expect(
      (await api.patch('/api/v3/services/checkout', { tags: ['shop', 'team:payments:eu'] })).status,
    ).toBe(204);

    // Assess
    await expect
      .poll(async () => (await k8s.get<KubeService>(kubeService('checkout'))).body.metadata.annotations, poll)
      .toEqual({ shop: '', team: 'payments' });
    await expect.poll(() => status('checkout'), poll).toEqual({ status: 'ready', error: null });
  });

  it('creates the Kubernetes Service again when it was deleted by hand and reconcile is requested', async () => {
    // Prepare
    expect((await k8s.delete(kubeService('checkout'))).status).toBe(200);

    // Act
    expect((await api.post('/api/v3/services/checkout/reconcile', {})).status).toBe(202);
    await assignIngress('checkout', { ip: '198.51.100.21' });

    // Assess
    await expect.poll(() => status('checkout'), poll).toEqual({ status: 'ready', error: null });
    expect((await service('checkout')).serviceEndpoint).toBe('198.51.100.21');
    expect(manifestView((await k8s.get<KubeService>(kubeService('checkout'))).body).spec.ports).toEqual([
      { name: 'iofog-service', port: 80, targetPort: 10024, protocol: 'TCP' },
    ]);
  });

  it('fails a LoadBalancer that never gets an ingress, with a message', async () => {
    // Act
    const created = await api.post('/api/v3/services', {
      name: 'no-ingress',
      type: 'external',
      resource: '203.0.113.10',
      targetPort: 443,
      servicePort: 443,
      k8sType: 'LoadBalancer',
    });

    // Assess
    expect(created.status).toBe(201);
    await expect
      .poll(() => status('no-ingress'), poll)
      .toEqual({
        status: 'failed',
        error:
          'LoadBalancer Service no-ingress has no ingress address after 10 checks 0.3 s apart; check the cloud load balancer controller, then POST /api/v3/services/no-ingress/reconcile',
      });
  });

  it('stores the ingress hostname when the cloud gives no IP', async () => {
    // Act
    const created = await api.post('/api/v3/services', {
      name: 'by-hostname',
      type: 'external',
      resource: '203.0.113.11',
      targetPort: 443,
      servicePort: 8443,
      k8sType: 'LoadBalancer',
    });
    expect(created.status).toBe(201);
    await assignIngress('by-hostname', { hostname: 'abc123.elb.us-east-1.amazonaws.com' });

    // Assess
    await expect.poll(() => status('by-hostname'), poll).toEqual({ status: 'ready', error: null });
    expect((await service('by-hostname')).serviceEndpoint).toBe('abc123.elb.us-east-1.amazonaws.com');
  });

  it('deletes the Kubernetes Service with the service', async () => {
    // Act
    expect((await api.delete('/api/v3/services/by-hostname')).status).toBe(204);

    // Assess
    await expect.poll(async () => (await k8s.get(kubeService('by-hostname'))).status, poll).toBe(404);
  });
});

describe('concurrency and the operator', () => {
  it('keeps 100 concurrently created services and every operator entry, through an operator rewrite', async () => {
    // Prepare
    const names = Array.from({ length: 100 }, (_, i) => `burst-${String(i).padStart(3, '0')}`);
    let next = 0;

    // Act: 10 clients create 100 ClusterIP services; the operator rewrites the ConfigMap meanwhile
    const creating = Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next < names.length) {
          const name = names[next++]!;
          const response = await api.post('/api/v3/services', {
            name,
            type: 'external',
            resource: `${name}.example.com`,
            targetPort: 80,
            servicePort: 80,
            k8sType: 'ClusterIP',
          });
          expect(response.status).toBe(201);
        }
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await operatorRewrite('1.0.1');
    await creating;

    // Assess
    await expect
      .poll(
        async () =>
          (await api.get<Service[]>('/api/v3/services')).body.filter(
            (s) => s.name.startsWith('burst-') && s.provisioningStatus === 'ready',
          ).length,
        poll,
      )
      .toBe(100);
    const entries = await hubEntries();
    const listeners = entries.filter(
      ([type, attributes]) => type === 'tcpListener' && String(attributes.name).startsWith('burst-'),
    );
    expect(listeners.map(([, attributes]) => attributes.name).sort()).toEqual(
      names.map((name) => `${name}-listener`),
    );
    expect(entries.slice(0, operatorTemplate(NAMESPACE, '1.0.1').length)).toEqual(
      operatorTemplate(NAMESPACE, '1.0.1'),
    );
  });

  it('loses nothing when the operator rewrites the ConfigMap between reconciles', async () => {
    // Prepare
    await operatorRewrite('1.0.2');
    const before = await hubEntries();

    // Act
    const created = await api.post('/api/v3/services', {
      name: 'after-rewrite',
      type: 'external',
      resource: 'after.example.com',
      targetPort: 80,
      servicePort: 80,
      k8sType: 'ClusterIP',
    });
    expect(created.status).toBe(201);

    // Assess
    await expect.poll(() => status('after-rewrite'), poll).toEqual({ status: 'ready', error: null });
    const after = await hubEntries();
    const bridges = (entries: Entry[]) =>
      entries.filter(([type]) => type === 'tcpListener' || type === 'tcpConnector').map(([, a]) => a.name);
    // Everything that was there is still there, in the same order, and the new service's two entries joined
    const kept = bridges(after).filter((name) => bridges(before).includes(name));
    expect({
      kept,
      added: bridges(after)
        .filter((name) => !bridges(before).includes(name))
        .sort(),
    }).toEqual({
      kept: bridges(before),
      added: ['after-rewrite-connector', 'after-rewrite-listener'],
    });
    expect(after.slice(0, operatorTemplate(NAMESPACE, '1.0.2').length)).toEqual(
      operatorTemplate(NAMESPACE, '1.0.2'),
    );
  });
});

describe('failures of the Kubernetes API', () => {
  it.each([
    ['answers 500', () => Object.assign(new Error('HTTP-Code: 500 Internal Server Error'), { code: 500 })],
    ['times out', () => Object.assign(new Error('connect ETIMEDOUT 127.0.0.1:6443'), { code: 'ETIMEDOUT' })],
  ])('converges when the apiserver %s (three times)', async (what, fault) => {
    // Prepare
    armFault('k8s:read-configmap', 3, fault);

    // Act
    const name = `after-${what.replace(/[^a-z0-9]/g, '')}`;
    expect(
      (
        await api.post('/api/v3/services', {
          name,
          type: 'external',
          resource: `${name}.example.com`,
          targetPort: 80,
          servicePort: 80,
          k8sType: 'ClusterIP',
        })
      ).status,
    ).toBe(201);

    // Assess
    await expect.poll(() => status(name), poll).toEqual({ status: 'ready', error: null });
    expect((await hubEntries()).map(([, attributes]) => attributes.name)).toContain(`${name}-listener`);
  });

  it('re-reads and re-applies when the ConfigMap replace answers 409 (resourceVersion moved)', async () => {
    // Prepare
    armFault('k8s:replace-configmap', 4, () =>
      Object.assign(new Error('HTTP-Code: 409 Conflict'), { code: 409 }),
    );

    // Act
    expect(
      (
        await api.post('/api/v3/services', {
          name: 'after-conflict',
          type: 'external',
          resource: 'c.example.com',
          targetPort: 80,
          servicePort: 80,
          k8sType: 'ClusterIP',
        })
      ).status,
    ).toBe(201);

    // Assess
    await expect.poll(() => status('after-conflict'), poll).toEqual({ status: 'ready', error: null });
  });

  it('fails with a clear error while the operator ConfigMap is missing, and recovers on reconcile', async () => {
    // Prepare
    const saved = await hubEntries();
    expect((await k8s.delete(CONFIGMAP)).status).toBe(200);

    // Act
    expect(
      (
        await api.post('/api/v3/services', {
          name: 'no-hub',
          type: 'external',
          resource: 'n.example.com',
          targetPort: 80,
          servicePort: 80,
          k8sType: 'ClusterIP',
        })
      ).status,
    ).toBe(201);

    // Assess
    await expect
      .poll(() => status('no-hub'), poll)
      .toEqual({
        status: 'failed',
        error: `ConfigMap iofog-router not found in namespace ${NAMESPACE}: the operator creates it; install or repair the control plane`,
      });

    // Act: the operator puts it back; the user retries
    await k8s.post(`/api/v1/namespaces/${NAMESPACE}/configmaps`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'iofog-router', namespace: NAMESPACE },
      data: { 'skrouterd.json': JSON.stringify(saved) },
    });
    expect((await api.post('/api/v3/services/no-hub/reconcile', {})).status).toBe(202);

    // Assess
    await expect.poll(() => status('no-hub'), poll).toEqual({ status: 'ready', error: null });
  });
});

describe('validation on a Kubernetes control plane', () => {
  it.each([
    [
      'k8sType missing for external',
      { name: 'x1', type: 'external', resource: 'a.example.com', targetPort: 80, servicePort: 80 },
      "Required field 'k8sType' is missing",
    ],
    [
      'servicePort missing for external',
      { name: 'x2', type: 'external', resource: 'a.example.com', targetPort: 80, k8sType: 'ClusterIP' },
      "Required field 'servicePort' is missing",
    ],
  ])('rejects a service with %s', async (_case, body, message) => {
    // Act
    const response = await api.post('/api/v3/services', body);

    // Assess
    expect(response).toMatchObject({ status: 400, body: { name: 'ValidationError', message } });
  });

  it('rejects an agent with isSystem', async () => {
    // Act
    const response = await api.post('/api/v3/iofog', { name: 'sys', host: '10.0.0.9', isSystem: true });

    // Assess
    expect(response).toMatchObject({
      status: 400,
      body: {
        name: 'ValidationError',
        message: "Field 'isSystem' must not be true when the control plane is Kubernetes",
      },
    });
  });
});

/**
 * The fleet CAs on Kubernetes belong to the operator: it keeps them in Secrets of the controller
 * namespace and imports each with POST /api/v3/certificates/ca (type k8s-secret). The test plays the
 * operator, with CAs made by openssl (an implementation independent of the controller's own).
 */
describe('the fleet certificate authorities on Kubernetes', () => {
  const SECRETS = `/api/v1/namespaces/${NAMESPACE}/secrets`;
  const CA = '/api/v3/certificates/ca';
  const dir = mkdtempSync(join(tmpdir(), 'fogbridge-operator-ca-'));
  type Agent = { platformStatus: { phase: string; message: string | null } };
  const IMPORT = 'the operator imports it with POST /api/v3/certificates/ca (type k8s-secret)';
  const ROUTER_WAIT = `waiting for CA router-site-ca, default-router-local-ca: ${IMPORT}`;
  const NATS_WAIT = `NATS waiting for CA nats-site-ca, default-nats-local-ca: ${IMPORT}`;

  /** A CA as an operator makes one with openssl: RSA 2048, CA:TRUE, PKCS#8 key. */
  function operatorCa(name: string): { cert: string; key: string } {
    const made = opensslCa(name, { dir });
    return { cert: made.certPem, key: made.keyPem };
  }

  const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
  const secretNames = async () =>
    (await k8s.get<{ items: { metadata: { name: string } }[] }>(SECRETS)).body.items
      .map((s) => s.metadata.name)
      .sort();

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('an agent waits with a message while no CA is imported; the controller makes none itself', async () => {
    // Act
    await expect
      .poll(async () => (await api.get<Agent>('/api/v3/iofog/fog-a')).body.platformStatus, poll)
      .toEqual({
        phase: 'pending',
        message: `${ROUTER_WAIT}; ${NATS_WAIT}`,
      });
    const cas = await api.get(CA);
    const issued = await api.get('/api/v3/certificates');

    // Assess
    expect(cas.body).toEqual({ cas: [] });
    expect(issued.body).toEqual({ certificates: [] });
    expect(await secretNames()).toEqual([]);
  });

  it('refuses an import of a missing Secret (404) and of a Secret without tls.key (400), writing nothing', async () => {
    // Prepare
    const { cert } = operatorCa('half-ca');
    expect(
      (
        await k8s.post(SECRETS, {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'half-ca' },
          data: { 'tls.crt': b64(cert) },
        })
      ).status,
    ).toBe(201);

    // Act
    const missing = await api.post(CA, {
      name: 'router-site-ca',
      type: 'k8s-secret',
      secretName: 'router-site-ca',
    });
    const noKey = await api.post(CA, { name: 'half-ca', type: 'k8s-secret', secretName: 'half-ca' });

    // Assess
    expect({ status: missing.status, body: missing.body }).toEqual({
      status: 404,
      body: { name: 'NotFoundError', message: `Secret router-site-ca not found in namespace ${NAMESPACE}` },
    });
    expect({ status: noKey.status, body: noKey.body }).toEqual({
      status: 400,
      body: {
        name: 'ValidationError',
        message: 'Secret half-ca has no tls.key; a CA Secret needs tls.crt and tls.key',
      },
    });
    expect((await api.get(CA)).body).toEqual({ cas: [] });
  });

  it("imports the operator's CA Secrets; the waiting agent then gets certificates signed by exactly those CAs", async () => {
    // Prepare: the operator's Secrets, as the operator writes them (ca.crt = tls.crt for a CA)
    const operator = {
      'router-site-ca': operatorCa('router-site-ca'),
      'default-router-local-ca': operatorCa('default-router-local-ca'),
    };
    for (const [name, ca] of Object.entries(operator)) {
      const created = await k8s.post(SECRETS, {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'kubernetes.io/tls',
        metadata: { name },
        data: { 'tls.crt': b64(ca.cert), 'tls.key': b64(ca.key), 'ca.crt': b64(ca.cert) },
      });
      expect(created.status).toBe(201);
    }

    // Act: the operator's import calls
    const imports = [];
    for (const name of Object.keys(operator))
      imports.push(await api.post(CA, { name, type: 'k8s-secret', secretName: name }));

    // Assess
    expect(imports.map((response) => response.status)).toEqual([201, 201]);
    // Its router is provisioned; its NATS leaf still waits for the NATS CAs (test/k8s/nats.test.ts).
    await expect
      .poll(async () => (await api.get<Agent>('/api/v3/iofog/fog-a')).body.platformStatus, poll)
      .toEqual({ phase: 'pending', message: NATS_WAIT });
    const listed = (
      await api.get<{ certificates: { name: string; isCA: boolean; caName: string | null }[] }>(
        '/api/v3/certificates',
      )
    ).body.certificates.filter((c) => !c.isCA);
    expect(listed.map((c) => [c.name, c.caName]).sort()).toEqual([
      ['router-local-server-fog-a', 'default-router-local-ca'],
      ['router-site-server-fog-a', 'router-site-ca'],
    ]);
    for (const { name, caName } of listed) {
      const certificate = (await api.get<{ data: { certificate: string } }>(`/api/v3/certificates/${name}`))
        .body;
      const signer = new X509Certificate(operator[caName as keyof typeof operator].cert);
      expect(new X509Certificate(certificate.data.certificate).verify(signer.publicKey)).toBe(true);
    }
    // Only the operator's Secrets exist, and only the imported CAs: nothing self-signed, no NATS CA.
    expect(await secretNames()).toEqual(['default-router-local-ca', 'half-ca', 'router-site-ca']);
    expect((await api.get<{ cas: { name: string }[] }>(CA)).body.cas.map((ca) => ca.name).sort()).toEqual([
      'default-router-local-ca',
      'router-site-ca',
    ]);
    const duplicate = await api.post(CA, {
      name: 'router-site-ca',
      type: 'k8s-secret',
      secretName: 'router-site-ca',
    });
    expect(duplicate.status).toBe(409);
  });
});

describe('moving the default router on Kubernetes', () => {
  type Link = { host: string; port: string; role: string };
  const linkOf = (agent: ScriptedAgent) =>
    (agent.runningRouter?.config as { connectors?: Record<string, Link> } | undefined)?.connectors?.[
      'default-router'
    ];

  it('PUT /api/v3/router with a new host rebuilds the edge router dialing it, which then links to the new host', async () => {
    // Prepare: fog-a (its router certificates signed by the imported CAs) provisioned, its router running
    const key = await api.get<{ key: string }>('/api/v3/iofog/fog-a/provisioning-key');
    const agent = new ScriptedAgent(t.runtime.url);
    await agent.provision(key.body.key, 1);
    await eventually(async () => {
      await agent.poll();
      return linkOf(agent)?.host === 'router.example.com' ? true : undefined;
    }, "fog-a's running link to the default router");
    const starts = agent.runningRouter!.starts;

    // Act
    const moved = await api.put('/api/v3/router', { host: 'router2.example.com' });

    // Assess: served with rebuild until fog-a acknowledges; then its router runs the new link
    expect(moved.status).toBe(200);
    await eventually(async () => {
      const { microservices } = await agent.request('GET', 'microservices');
      const router = (microservices as { isRouter?: boolean; rebuild?: boolean; config?: string }[]).find(
        (item) => item.isRouter,
      );
      const config = JSON.parse(router?.config ?? '{}') as { connectors?: Record<string, Link> };
      return router?.rebuild && config.connectors?.['default-router']?.host === 'router2.example.com'
        ? true
        : undefined;
    }, 'a rebuild of fog-a with the new default router host');
    await eventually(async () => {
      await agent.poll();
      return linkOf(agent)?.host === 'router2.example.com' ? true : undefined;
    }, 'fog-a running its link to the new host');
    expect(linkOf(agent)).toEqual({
      name: 'default-router',
      role: 'edge',
      host: 'router2.example.com',
      port: '45671',
      sslProfile: 'router-site-server-fog-a',
    });
    expect(agent.runningRouter!.starts).toBe(starts + 1);
  });
});
