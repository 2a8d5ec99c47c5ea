import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildKubernetesService, kubernetesServicePatch } from '../../shared/domain/kubernetes-service.js';
import {
  applyDesiredToSkrouterd,
  parseSkrouterd,
  skrouterdAsRouterConfig,
} from '../../shared/domain/skrouterd.js';
import { cachedEksTokenProvider, mintEksToken } from '../../shared/k8s/eks-token.js';
import { operatorTemplate } from '../fixtures/operator-skrouterd.js';

const settings = {
  namespace: 'iofog',
  controllerName: 'pot',
  appLabel: 'iofog',
  componentLabelKey: 'datasance.com/component',
};

describe('the Kubernetes Service of seed 000', () => {
  it('builds the worked object for checkout (bridgePort 10024, controller name pot)', () => {
    // Act
    const manifest = buildKubernetesService(
      {
        name: 'checkout',
        tags: ['checkout', 'service.beta.kubernetes.io/aws-load-balancer-type: nlb'],
        servicePort: 80,
        bridgePort: 10024,
        k8sType: 'LoadBalancer',
      },
      settings,
    );

    // Assess
    expect(manifest).toEqual({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name: 'checkout',
        namespace: 'iofog',
        labels: {
          'app.kubernetes.io/name': 'iofog',
          'app.kubernetes.io/component': 'controller',
          'app.kubernetes.io/managed-by': 'controller',
          'app.kubernetes.io/instance': 'pot',
          'datasance.com/component': 'router',
        },
        annotations: { checkout: '', 'service.beta.kubernetes.io/aws-load-balancer-type': 'nlb' },
      },
      spec: {
        type: 'LoadBalancer',
        selector: { 'datasance.com/component': 'router' },
        ports: [{ name: 'iofog-service', port: 80, targetPort: 10024, protocol: 'TCP' }],
      },
    });
  });

  it.each([
    ['datasance (default)', 'datasance.com/component'],
    ['iofog', 'iofog.org/component'],
  ])('selects the router pods of the %s distribution', (_distribution, key) => {
    // Act
    const manifest = buildKubernetesService(
      { name: 'x', tags: [], servicePort: 1, bridgePort: 2, k8sType: 'ClusterIP' },
      { ...settings, componentLabelKey: key },
    );

    // Assess
    expect(manifest.spec.selector).toEqual({ [key]: 'router' });
    expect(manifest.metadata.labels[key]).toBe('router');
  });

  it('patches exactly type, selector, ports and the whole annotation map', () => {
    // Prepare
    const manifest = buildKubernetesService(
      { name: 'x', tags: ['a:b:c'], servicePort: 8080, bridgePort: 10030, k8sType: 'NodePort' },
      settings,
    );

    // Act / Assess
    expect(kubernetesServicePatch(manifest)).toEqual([
      { op: 'replace', path: '/spec/type', value: 'NodePort' },
      { op: 'replace', path: '/spec/selector', value: { 'datasance.com/component': 'router' } },
      {
        op: 'replace',
        path: '/spec/ports',
        value: [{ name: 'iofog-service', port: 8080, targetPort: 10030, protocol: 'TCP' }],
      },
      { op: 'add', path: '/metadata/annotations', value: { a: 'b' } },
    ]);
  });
});

describe('the hub skrouterd.json (array of pairs)', () => {
  const checkoutListener = { name: 'checkout-listener', port: '10024', address: 'checkout' };
  const paymentsConnector = {
    name: 'checkout-connector',
    host: 'payments.payments.svc.cluster.local',
    port: '8080',
    address: 'checkout',
    processId: 'payments.payments.svc.cluster.local-k8s-8080',
  };

  it('appends the seed example entries after every operator entry, in order', () => {
    // Prepare
    const template = operatorTemplate('iofog');

    // Act
    const next = applyDesiredToSkrouterd(template, {
      listeners: [checkoutListener],
      connectors: [paymentsConnector],
    });

    // Assess: the seed's "Kubernetes hub file (skrouterd.json)" entries, after the operator's
    expect(next).toEqual([
      ...template,
      ['tcpListener', checkoutListener],
      ['tcpConnector', paymentsConnector],
    ]);
  });

  it('updates an entry in place and deletes managed entries no longer desired, keeping the rest', () => {
    // Prepare
    const template = operatorTemplate('iofog');
    const before = [
      ...template.slice(0, 3),
      ['tcpListener', { name: 'old-listener', port: '10099', address: 'old' }],
      ['tcpListener', { ...checkoutListener, port: '10000' }],
      ['tcpListener', { name: 'operator-owned', port: '1', address: 'x' }],
      ...template.slice(3),
    ] as [string, Record<string, unknown>][];

    // Act
    const next = applyDesiredToSkrouterd(before, { listeners: [checkoutListener], connectors: [] });

    // Assess
    expect(next).toEqual([
      ...template.slice(0, 3),
      ['tcpListener', checkoutListener],
      ['tcpListener', { name: 'operator-owned', port: '1', address: 'x' }],
      ...template.slice(3),
    ]);
  });

  it('reads the bridge entries back in object form', () => {
    // Act
    const view = skrouterdAsRouterConfig(
      parseSkrouterd(
        JSON.stringify([
          ['tcpListener', checkoutListener],
          ['router', {}],
        ]),
      ),
    );

    // Assess
    expect(view).toEqual({
      bridges: { tcpListeners: { 'checkout-listener': checkoutListener }, tcpConnectors: {} },
    });
  });

  it.each([
    ['not JSON', '{', /^skrouterd.json is not valid JSON/],
    ['an object', '{}', /^skrouterd.json is not a JSON array of \[type, attributes\] pairs$/],
    ['a bad pair', '[["router"]]', /^skrouterd.json entry 0 is not a \[type, attributes\] pair$/],
  ])('rejects a document that is %s', (_case, text, message) => {
    // Act / Assess
    expect(() => parseSkrouterd(text)).toThrow(message);
  });
});

describe('the EKS bearer token', () => {
  const credentials = {
    accessKeyId: 'AKIDEXAMPLE',
    secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  };
  const now = new Date('2026-11-29T10:00:00Z');

  /** SigV4 query presigning written out from the AWS documentation, to check the signer independently. */
  function expectedSignature(query: Record<string, string>): string {
    const canonicalQuery = Object.keys(query)
      .sort()
      .map((key) => `${encodeURIComponent(key)}=${encodeURIComponent(query[key]!)}`)
      .join('&');
    const canonicalRequest = [
      'GET',
      '/',
      canonicalQuery,
      'host:sts.us-east-1.amazonaws.com\nx-k8s-aws-id:prod-cluster\n',
      'host;x-k8s-aws-id',
      createHash('sha256').update('').digest('hex'),
    ].join('\n');
    const stringToSign = [
      'AWS4-HMAC-SHA256',
      '20261129T100000Z',
      '20261129/us-east-1/sts/aws4_request',
      createHash('sha256').update(canonicalRequest).digest('hex'),
    ].join('\n');
    let key: Buffer = createHmac('sha256', `AWS4${credentials.secretAccessKey}`).update('20261129').digest();
    for (const part of ['us-east-1', 'sts', 'aws4_request'])
      key = createHmac('sha256', key).update(part).digest();
    return createHmac('sha256', key).update(stringToSign).digest('hex');
  }

  it('is k8s-aws-v1. + base64url (no padding) of a presigned STS GetCallerIdentity URL signed with x-k8s-aws-id', async () => {
    // Act
    const token = await mintEksToken({ clusterName: 'prod-cluster', region: 'us-east-1', credentials, now });

    // Assess
    expect(token.startsWith('k8s-aws-v1.')).toBe(true);
    const encoded = token.slice('k8s-aws-v1.'.length);
    expect(encoded).toMatch(/^[A-Za-z0-9_-]+$/);
    const url = new URL(Buffer.from(encoded, 'base64url').toString('utf8'));
    expect(`${url.protocol}//${url.host}${url.pathname}`).toBe('https://sts.us-east-1.amazonaws.com/');
    const query = Object.fromEntries(url.searchParams);
    expect(query).toEqual({
      Action: 'GetCallerIdentity',
      Version: '2011-06-15',
      'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
      'X-Amz-Credential': 'AKIDEXAMPLE/20261129/us-east-1/sts/aws4_request',
      'X-Amz-Date': '20261129T100000Z',
      'X-Amz-Expires': '60',
      'X-Amz-SignedHeaders': 'host;x-k8s-aws-id',
      'X-Amz-Signature': query['X-Amz-Signature'],
    });
    const { 'X-Amz-Signature': signature, ...signed } = query;
    expect(signature).toBe(expectedSignature(signed as Record<string, string>));
  });

  it('is reused below its 15-minute life and minted again after 14 minutes', async () => {
    // Prepare
    let clock = 0;
    let minted = 0;
    const provider = cachedEksTokenProvider(
      async () => `token-${++minted}`,
      () => clock,
    );

    // Act
    const first = await provider();
    clock = 13 * 60 * 1000;
    const second = await provider();
    clock = 14 * 60 * 1000;
    const third = await provider();

    // Assess
    expect([first, second, third]).toEqual(['token-1', 'token-1', 'token-2']);
  });
});
