import { describe, expect, it } from 'vitest';
import {
  buildTcpConnector,
  buildTcpListener,
  type ConnectorBackend,
  connectorHost,
  connectorName,
  connectorOnDefaultRouter,
  connectorProcessId,
  EDGE_LOCAL_HOST,
  INTERIOR_LOCAL_HOST,
  listenerName,
} from '../../shared/domain/router-objects.js';
import type { ServiceType } from '../../shared/domain/service.js';

// The microservice of the seed's examples: orders/checkout, uuid 1111...
const CHECKOUT_UUID = '11111111-1111-1111-1111-111111111111';

const checkoutMicroservice = (
  routerMode: 'edge' | 'interior',
  hostNetworkMode: boolean,
): ConnectorBackend => ({
  type: 'microservice',
  microserviceUuid: CHECKOUT_UUID,
  applicationName: 'orders',
  microserviceName: 'checkout',
  hostNetworkMode,
  routerMode,
});

describe('router object constants', () => {
  it('uses the hosts the seed names for local backends', () => {
    // Act / Assess
    expect(EDGE_LOCAL_HOST).toBe('edgelet.default.svc.bridge.local');
    expect(INTERIOR_LOCAL_HOST).toBe('127.0.0.1');
  });

  it.each([
    ['checkout', 'checkout-listener', 'checkout-connector'],
    ['ssh', 'ssh-listener', 'ssh-connector'],
    ['payments', 'payments-listener', 'payments-connector'],
    ['vendor', 'vendor-listener', 'vendor-connector'],
  ])('names the objects of service %s as %s and %s', (service, listener, connector) => {
    // Act / Assess
    expect(listenerName(service)).toBe(listener);
    expect(connectorName(service)).toBe(connector);
  });
});

describe('connectorHost: seed table "Connector host"', () => {
  // Backend | Router on that agent | Host the connector dials
  it.each<{ row: string; backend: ConnectorBackend; host: string }>([
    {
      row: 'Microservice, edge router, not host network | edge',
      backend: checkoutMicroservice('edge', false),
      host: 'orders.checkout', // {applicationName}.{microserviceName}
    },
    {
      row: 'Microservice, edge router, host network | edge',
      backend: checkoutMicroservice('edge', true),
      host: 'edgelet.default.svc.bridge.local',
    },
    {
      row: 'Microservice, interior router | interior (not host network)',
      backend: checkoutMicroservice('interior', false),
      host: '127.0.0.1',
    },
    {
      row: 'Microservice, interior router | interior (host network)',
      backend: checkoutMicroservice('interior', true),
      host: '127.0.0.1',
    },
    {
      row: 'Agent, edge router | edge',
      backend: { type: 'agent', agentUuid: 'fog-a', routerMode: 'edge' },
      host: 'edgelet.default.svc.bridge.local',
    },
    {
      row: 'Agent, interior router | interior',
      backend: { type: 'agent', agentUuid: 'fog-a', routerMode: 'interior' },
      host: '127.0.0.1',
    },
    {
      row: 'k8s | default router',
      backend: { type: 'k8s', resource: 'payments.payments.svc.cluster.local' },
      host: 'payments.payments.svc.cluster.local',
    },
    {
      row: 'external | default router',
      backend: { type: 'external', resource: '203.0.113.10' },
      host: '203.0.113.10',
    },
  ])('$row dials $host', ({ backend, host }) => {
    // Act / Assess
    expect(connectorHost(backend)).toBe(host);
  });

  it('builds {applicationName}.{microserviceName} from the names, not from the resource', () => {
    // Prepare
    const backend: ConnectorBackend = {
      type: 'microservice',
      microserviceUuid: '22222222-2222-2222-2222-222222222222',
      applicationName: 'billing',
      microserviceName: 'invoices',
      hostNetworkMode: false,
      routerMode: 'edge',
    };

    // Act
    const host = connectorHost(backend);

    // Assess
    expect(host).toBe('billing.invoices');
  });
});

describe('connectorProcessId: seed table "tcpConnector.processId"', () => {
  // Type | processId
  it.each<{ type: string; backend: ConnectorBackend; targetPort: number; processId: string }>([
    {
      type: 'microservice → microservice uuid',
      backend: checkoutMicroservice('edge', false),
      targetPort: 8080,
      processId: '11111111-1111-1111-1111-111111111111',
    },
    {
      type: 'agent → {agentUuid}-local-{targetPort}',
      backend: { type: 'agent', agentUuid: 'fog-a', routerMode: 'edge' },
      targetPort: 22,
      processId: 'fog-a-local-22',
    },
    {
      type: 'k8s → {resource}-k8s-{targetPort}',
      backend: { type: 'k8s', resource: 'payments.payments.svc.cluster.local' },
      targetPort: 8080,
      processId: 'payments.payments.svc.cluster.local-k8s-8080',
    },
    {
      type: 'external → {resource}-external-{targetPort}',
      backend: { type: 'external', resource: '203.0.113.10' },
      targetPort: 443,
      processId: '203.0.113.10-external-443',
    },
  ])('$type gives $processId', ({ backend, targetPort, processId }) => {
    // Act / Assess
    expect(connectorProcessId(backend, targetPort)).toBe(processId);
  });

  it('keeps the microservice uuid whatever the target port', () => {
    // Act / Assess
    expect(connectorProcessId(checkoutMicroservice('interior', true), 9999)).toBe(CHECKOUT_UUID);
  });
});

describe('connectorOnDefaultRouter: seed table "Router that receives tcpConnector"', () => {
  it.each<[ServiceType, boolean, string]>([
    ['microservice', false, 'the agent that runs the microservice'],
    ['agent', false, 'that agent'],
    ['k8s', true, 'the default router'],
    ['external', true, 'the default router'],
  ])('%s → on default router: %s (%s)', (type, onDefaultRouter) => {
    // Act / Assess
    expect(connectorOnDefaultRouter(type)).toBe(onDefaultRouter);
  });
});

describe('buildTcpListener', () => {
  it('builds the seed hub listener for checkout with bridgePort 10024', () => {
    // Act
    const listener = buildTcpListener('checkout', 10024);

    // Assess
    expect(listener).toStrictEqual({
      name: 'checkout-listener',
      port: '10024',
      address: 'checkout',
    });
  });

  it.each([
    ['payments', 10025, { name: 'payments-listener', port: '10025', address: 'payments' }],
    ['ssh', 65535, { name: 'ssh-listener', port: '65535', address: 'ssh' }],
  ])(
    'builds the listener of %s on port %d with string port and address = service name',
    (name, port, expected) => {
      // Act / Assess
      expect(buildTcpListener(name, port)).toStrictEqual(expected);
    },
  );
});

describe('buildTcpConnector: seed section "One example of each type"', () => {
  it.each<{
    example: string;
    service: string;
    targetPort: number;
    backend: ConnectorBackend;
    expected: object;
  }>([
    {
      example: 'Microservice orders/checkout on edge agent fog-a, not host network, targetPort 8080',
      service: 'checkout',
      targetPort: 8080,
      backend: checkoutMicroservice('edge', false),
      expected: {
        name: 'checkout-connector',
        host: 'orders.checkout',
        port: '8080',
        address: 'checkout',
        processId: '11111111-1111-1111-1111-111111111111',
      },
    },
    {
      example: 'Same microservice with host network on an edge router',
      service: 'checkout',
      targetPort: 8080,
      backend: checkoutMicroservice('edge', true),
      expected: {
        name: 'checkout-connector',
        host: 'edgelet.default.svc.bridge.local',
        port: '8080',
        address: 'checkout',
        processId: '11111111-1111-1111-1111-111111111111',
      },
    },
    {
      example: 'The same microservice on an interior router',
      service: 'checkout',
      targetPort: 8080,
      backend: checkoutMicroservice('interior', false),
      expected: {
        name: 'checkout-connector',
        host: '127.0.0.1',
        port: '8080',
        address: 'checkout',
        processId: '11111111-1111-1111-1111-111111111111',
      },
    },
    {
      example: 'Agent service, resource fog-a, targetPort 22, edge router',
      service: 'ssh',
      targetPort: 22,
      backend: { type: 'agent', agentUuid: 'fog-a', routerMode: 'edge' },
      expected: {
        name: 'ssh-connector',
        host: 'edgelet.default.svc.bridge.local',
        port: '22',
        address: 'ssh',
        processId: 'fog-a-local-22',
      },
    },
    {
      example: 'Interior agent uses host 127.0.0.1',
      service: 'ssh',
      targetPort: 22,
      backend: { type: 'agent', agentUuid: 'fog-a', routerMode: 'interior' },
      expected: {
        name: 'ssh-connector',
        host: '127.0.0.1',
        port: '22',
        address: 'ssh',
        processId: 'fog-a-local-22',
      },
    },
    {
      example: 'type: k8s, resource payments.payments.svc.cluster.local, targetPort 8080',
      service: 'payments',
      targetPort: 8080,
      backend: { type: 'k8s', resource: 'payments.payments.svc.cluster.local' },
      expected: {
        name: 'payments-connector',
        host: 'payments.payments.svc.cluster.local',
        port: '8080',
        address: 'payments',
        processId: 'payments.payments.svc.cluster.local-k8s-8080',
      },
    },
    {
      example: 'type: external, resource 203.0.113.10, targetPort 443',
      service: 'vendor',
      targetPort: 443,
      backend: { type: 'external', resource: '203.0.113.10' },
      expected: {
        name: 'vendor-connector',
        host: '203.0.113.10',
        port: '443',
        address: 'vendor',
        processId: '203.0.113.10-external-443',
      },
    },
  ])('$example', ({ service, targetPort, backend, expected }) => {
    // Act / Assess
    expect(buildTcpConnector(service, targetPort, backend)).toStrictEqual(expected);
  });

  it('writes the seed Kubernetes hub file (skrouterd.json) entries as listener/connector pairs', () => {
    // Prepare
    const seedHubFile = [
      [
        'tcpListener',
        {
          name: 'checkout-listener',
          port: '10024',
          address: 'checkout',
        },
      ],
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
    ];

    // Act
    const pairs = [
      ['tcpListener', buildTcpListener('checkout', 10024)],
      [
        'tcpConnector',
        buildTcpConnector('checkout', 8080, { type: 'k8s', resource: 'payments.payments.svc.cluster.local' }),
      ],
    ];

    // Assess
    expect(pairs).toStrictEqual(seedHubFile);
  });

  it('shares address between the listener and the connector of one service, and has no siteId', () => {
    // Prepare
    const backend: ConnectorBackend = { type: 'external', resource: '203.0.113.10' };

    // Act
    const listener = buildTcpListener('vendor', 10024);
    const connector = buildTcpConnector('vendor', 443, backend);

    // Assess
    expect(listener.address).toBe('vendor');
    expect(connector.address).toBe('vendor');
    expect(Object.keys(connector).sort()).toEqual(['address', 'host', 'name', 'port', 'processId']);
    expect(Object.keys(listener).sort()).toEqual(['address', 'name', 'port']);
  });
});
