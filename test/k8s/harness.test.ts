import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeApiserver, startKubeApiserver } from './harness.js';
import { KubeClient } from './http.js';

interface ObjectMeta {
  name: string;
  namespace?: string;
  resourceVersion: string;
  uid: string;
}
interface ConfigMap {
  kind: string;
  metadata: ObjectMeta;
  data?: Record<string, string>;
}
interface Service {
  kind: string;
  metadata: ObjectMeta;
  spec: {
    type: string;
    clusterIP?: string;
    ports: Array<{ name?: string; port: number; targetPort?: number | string; protocol?: string }>;
  };
}
interface Status {
  kind: string;
  status: string;
  reason?: string;
  code: number;
}

const NAMESPACE = 'fogbridge-test';
let kube: KubeApiserver;
let api: KubeClient;

// The first run builds kube-apiserver from source (several minutes); later runs use the cached binary.
beforeAll(async () => {
  kube = await startKubeApiserver();
  api = new KubeClient({ url: kube.url, token: kube.token, caFile: kube.caFile });
  const created = await api.post('/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: NAMESPACE },
  });
  expect(created.status).toBe(201);
}, 1_800_000);

afterAll(async () => {
  await kube?.stop();
});

describe('the kube-apiserver test harness', () => {
  it('serves a kubeconfig that points at the server with the admin token and its CA', () => {
    // Act
    const kubeconfig = readFileSync(kube.kubeconfigPath, 'utf8');

    // Assess
    expect(kube.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(kubeconfig).toContain(`server: ${kube.url}`);
    expect(kubeconfig).toContain(kube.token);
    expect(kubeconfig).toContain(`certificate-authority: "${kube.caFile}"`);
  });

  it('rejects a request without a token with 401', async () => {
    // Prepare
    const anonymous = api.withToken(undefined);

    // Act
    const res = await anonymous.get<Status>(`/api/v1/namespaces/${NAMESPACE}/configmaps`);

    // Assess
    expect(res.status).toBe(401);
    expect(res.body.reason).toBe('Unauthorized');
  });

  it('rejects a request with a wrong token with 401', async () => {
    // Prepare
    const stranger = api.withToken('not-the-token');

    // Act
    const res = await stranger.get<Status>('/api/v1/namespaces');

    // Assess
    expect(res.status).toBe(401);
  });

  it('creates a ConfigMap and reads it back', async () => {
    // Prepare
    const configMap = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'roundtrip', labels: { 'app.kubernetes.io/managed-by': 'fogbridge' } },
      data: { 'config.json': '{"bridges":[]}' },
    };

    // Act
    const created = await api.post<ConfigMap>(`/api/v1/namespaces/${NAMESPACE}/configmaps`, configMap);
    const read = await api.get<ConfigMap>(`/api/v1/namespaces/${NAMESPACE}/configmaps/roundtrip`);

    // Assess
    expect(created.status).toBe(201);
    expect(read.status).toBe(200);
    expect(read.body.metadata.namespace).toBe(NAMESPACE);
    expect(read.body.metadata.uid).toBe(created.body.metadata.uid);
    expect(read.body.metadata.resourceVersion).toBe(created.body.metadata.resourceVersion);
    expect(read.body.data).toEqual({ 'config.json': '{"bridges":[]}' });
  });

  it('answers 409 Conflict to an update with a stale resourceVersion', async () => {
    // Prepare
    const path = `/api/v1/namespaces/${NAMESPACE}/configmaps/optimistic`;
    const created = await api.post<ConfigMap>(`/api/v1/namespaces/${NAMESPACE}/configmaps`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'optimistic' },
      data: { generation: '1' },
    });
    expect(created.status).toBe(201);
    const staleVersion = created.body.metadata.resourceVersion;
    const first = await api.put<ConfigMap>(path, { ...created.body, data: { generation: '2' } });
    expect(first.status).toBe(200);
    expect(first.body.metadata.resourceVersion).not.toBe(staleVersion);

    // Act
    const stale = await api.put<Status>(path, {
      ...created.body,
      metadata: { ...created.body.metadata, resourceVersion: staleVersion },
      data: { generation: 'stale' },
    });

    // Assess
    expect(stale.status).toBe(409);
    expect(stale.body.kind).toBe('Status');
    expect(stale.body.reason).toBe('Conflict');
    const current = await api.get<ConfigMap>(path);
    expect(current.body.data).toEqual({ generation: '2' });
  });

  it('creates a Service of type LoadBalancer and returns it with its port', async () => {
    // Prepare
    const service = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'bridge-checkout' },
      spec: {
        type: 'LoadBalancer',
        selector: { app: 'bridge-checkout' },
        ports: [{ name: 'tcp', port: 5000, targetPort: 5000, protocol: 'TCP' }],
      },
    };

    // Act
    const created = await api.post<Service>(`/api/v1/namespaces/${NAMESPACE}/services`, service);
    const read = await api.get<Service>(`/api/v1/namespaces/${NAMESPACE}/services/bridge-checkout`);

    // Assess
    expect(created.status).toBe(201);
    expect(created.body.spec.type).toBe('LoadBalancer');
    expect(created.body.spec.ports[0]?.port).toBe(5000);
    expect(created.body.spec.clusterIP).toMatch(/^10\.96\.\d+\.\d+$/);
    expect(read.status).toBe(200);
    expect(read.body.spec.ports[0]?.port).toBe(5000);
  });
});
