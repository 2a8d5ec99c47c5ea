import { describe, expect, it } from 'vitest';
import {
  applyDesiredBridges,
  canonicalJson,
  emptyHubRouterConfig,
  type RouterConfig,
  sameRouterConfig,
} from '../../shared/domain/router-config.js';
import type { TcpConnector, TcpListener } from '../../shared/domain/router-objects.js';
import {
  backendAgentConfig,
  checkoutConnector,
  checkoutListener,
  remoteHubConfig,
  secondAgentConfig,
} from '../fixtures/seed-000.js';

const paymentsConnector: TcpConnector = {
  name: 'payments-connector',
  host: 'payments.payments.svc.cluster.local',
  port: '8080',
  address: 'payments',
  processId: 'payments.payments.svc.cluster.local-k8s-8080',
};

const paymentsListener: TcpListener = { name: 'payments-listener', port: '10025', address: 'payments' };

describe('emptyHubRouterConfig', () => {
  it('starts the hub with both bridge maps present', () => {
    // Act / Assess
    expect(emptyHubRouterConfig()).toStrictEqual({ bridges: { tcpListeners: {}, tcpConnectors: {} } });
  });

  it('returns a fresh object on every call', () => {
    // Prepare
    const first = emptyHubRouterConfig();

    // Act
    first.bridges!.tcpListeners!['checkout-listener'] = checkoutListener;

    // Assess
    expect(emptyHubRouterConfig()).toStrictEqual({ bridges: { tcpListeners: {}, tcpConnectors: {} } });
  });
});

describe('applyDesiredBridges: seed router config object forms', () => {
  it('writes the seed "Remote hub router microservice config" (listener only, connector on the backend agent)', () => {
    // Prepare
    const hub = emptyHubRouterConfig();

    // Act
    const next = applyDesiredBridges(hub, { listeners: [checkoutListener], connectors: [] });

    // Assess
    expect(next).toStrictEqual(remoteHubConfig);
  });

  it('writes the seed backend agent router config (connector and, when tags select it, the listener)', () => {
    // Prepare
    const agentConfig: RouterConfig = {};

    // Act
    const next = applyDesiredBridges(agentConfig, {
      listeners: [checkoutListener],
      connectors: [checkoutConnector],
    });

    // Assess
    expect(next).toStrictEqual(backendAgentConfig);
  });

  it('writes the backend connector even when the agent tags select nothing', () => {
    // Prepare
    const agentConfig: RouterConfig = {};

    // Act
    const next = applyDesiredBridges(agentConfig, { listeners: [], connectors: [checkoutConnector] });

    // Assess
    expect(next).toStrictEqual({
      bridges: { tcpConnectors: { 'checkout-connector': checkoutConnector } },
    });
  });

  it('writes the seed "second agent tagged service.iofog.org/tag: checkout" config (listener only)', () => {
    // Prepare
    const secondAgent: RouterConfig = {};

    // Act
    const next = applyDesiredBridges(secondAgent, { listeners: [checkoutListener], connectors: [] });

    // Assess
    expect(next).toStrictEqual(secondAgentConfig);
  });

  it('puts a k8s connector and the hub listener on the hub (connector placed on the default router)', () => {
    // Prepare
    const hub = emptyHubRouterConfig();

    // Act
    const next = applyDesiredBridges(hub, { listeners: [paymentsListener], connectors: [paymentsConnector] });

    // Assess
    expect(next).toStrictEqual({
      bridges: {
        tcpListeners: { 'payments-listener': paymentsListener },
        tcpConnectors: { 'payments-connector': paymentsConnector },
      },
    });
  });

  it('leaves a config without bridges untouched when nothing is desired', () => {
    // Prepare
    const agentConfig: RouterConfig = { mode: 'edge' };

    // Act
    const next = applyDesiredBridges(agentConfig, { listeners: [], connectors: [] });

    // Assess
    expect(next).toStrictEqual({ mode: 'edge' });
  });
});

describe('applyDesiredBridges: fog reconcile and delete', () => {
  it('replaces every *-listener with the current match and keeps other entries and keys', () => {
    // Prepare
    const current: RouterConfig = {
      mode: 'edge',
      bridges: {
        tcpListeners: {
          'orders-listener': { name: 'orders-listener', port: '10030', address: 'orders' },
          'checkout-listener': { name: 'checkout-listener', port: '10099', address: 'checkout' },
          'mqtt-local': { name: 'mqtt-local', port: '1883', address: 'mqtt' },
        },
        tcpConnectors: { 'checkout-connector': checkoutConnector },
        httpListeners: { web: { port: '80' } },
      },
    };

    // Act
    const next = applyDesiredBridges(current, {
      listeners: [checkoutListener],
      connectors: [checkoutConnector],
    });

    // Assess
    expect(next).toStrictEqual({
      mode: 'edge',
      bridges: {
        tcpListeners: {
          'mqtt-local': { name: 'mqtt-local', port: '1883', address: 'mqtt' },
          'checkout-listener': checkoutListener,
        },
        tcpConnectors: { 'checkout-connector': checkoutConnector },
        httpListeners: { web: { port: '80' } },
      },
    });
  });

  it('drops the -listener entries of an agent that lost the tag and keeps its tcpConnectors', () => {
    // Prepare
    const current: RouterConfig = {
      bridges: {
        tcpListeners: { 'checkout-listener': checkoutListener },
        tcpConnectors: { 'checkout-connector': checkoutConnector, 'legacy-db': paymentsConnector },
      },
    };

    // Act
    const next = applyDesiredBridges(current, { listeners: [], connectors: [checkoutConnector] });

    // Assess
    expect(next).toStrictEqual({
      bridges: {
        tcpListeners: {},
        tcpConnectors: { 'legacy-db': paymentsConnector, 'checkout-connector': checkoutConnector },
      },
    });
  });

  it('removes {name}-connector and {name}-listener from the hub on delete', () => {
    // Prepare
    const hub: RouterConfig = {
      bridges: {
        tcpListeners: { 'payments-listener': paymentsListener },
        tcpConnectors: { 'payments-connector': paymentsConnector },
      },
    };

    // Act
    const next = applyDesiredBridges(hub, { listeners: [], connectors: [] });

    // Assess
    expect(next).toStrictEqual({ bridges: { tcpListeners: {}, tcpConnectors: {} } });
  });

  it('rewrites a changed listener port (update writes the listener again)', () => {
    // Prepare
    const hub: RouterConfig = {
      bridges: { tcpListeners: { 'checkout-listener': checkoutListener }, tcpConnectors: {} },
    };
    const moved: TcpListener = { name: 'checkout-listener', port: '10025', address: 'checkout' };

    // Act
    const next = applyDesiredBridges(hub, { listeners: [moved], connectors: [] });

    // Assess
    expect(next).toStrictEqual({
      bridges: { tcpListeners: { 'checkout-listener': moved }, tcpConnectors: {} },
    });
  });

  it('does not modify the config it is given', () => {
    // Prepare
    const current: RouterConfig = {
      bridges: { tcpListeners: { 'orders-listener': { name: 'orders-listener', port: '1', address: 'o' } } },
    };
    const snapshot = structuredClone(current);

    // Act
    applyDesiredBridges(current, { listeners: [checkoutListener], connectors: [checkoutConnector] });

    // Assess
    expect(current).toStrictEqual(snapshot);
  });
});

describe('sameRouterConfig and canonicalJson', () => {
  it.each<[string, RouterConfig, RouterConfig, boolean]>([
    [
      'same hub config, maps in another order',
      { bridges: { tcpListeners: { 'checkout-listener': checkoutListener }, tcpConnectors: {} } },
      {
        bridges: {
          tcpConnectors: {},
          tcpListeners: {
            'checkout-listener': { address: 'checkout', port: '10024', name: 'checkout-listener' },
          },
        },
      },
      true,
    ],
    [
      'listener port 10024 vs 10025',
      { bridges: { tcpListeners: { 'checkout-listener': checkoutListener } } },
      {
        bridges: {
          tcpListeners: {
            'checkout-listener': { name: 'checkout-listener', port: '10025', address: 'checkout' },
          },
        },
      },
      false,
    ],
    [
      'string port "10024" vs number 10024',
      { bridges: { tcpListeners: { 'checkout-listener': checkoutListener } } },
      { bridges: { tcpListeners: { 'checkout-listener': { ...checkoutListener, port: 10024 } as never } } },
      false,
    ],
    [
      'empty tcpConnectors map vs no map',
      { bridges: { tcpListeners: {}, tcpConnectors: {} } },
      { bridges: { tcpListeners: {} } },
      false,
    ],
  ])('%s → %s', (_case, a, b, same) => {
    // Act / Assess
    expect(sameRouterConfig(a, b)).toBe(same);
  });

  it('sorts object keys at every level and keeps array order', () => {
    // Prepare
    const value = { b: 1, a: { d: [3, 1, 2], c: { z: true, y: null } } };

    // Act
    const json = canonicalJson(value);

    // Assess
    expect(json).toBe('{"a":{"c":{"y":null,"z":true},"d":[3,1,2]},"b":1}');
  });
});
