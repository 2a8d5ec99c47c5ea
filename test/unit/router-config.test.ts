import { describe, expect, it } from 'vitest';
import {
  EVERY_SERVICE_SET,
  listenerSetsOfAgent,
  listenerSetsOfService,
  selectedListener,
  storedEntriesFor,
} from '../../shared/domain/placement.js';
import {
  applyDesiredBridges,
  canonicalJson,
  composeRouterConfig,
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

describe('composeRouterConfig: a router config from its stored parts', () => {
  it('rebuilds the seed backend agent config from its stored connector and the checkout token set', () => {
    // Prepare: the base holds no managed entry; the connector is stored under the agent, the listener
    // once in the `checkout` set
    const base: RouterConfig = { bridges: { tcpListeners: {}, tcpConnectors: {} } };

    // Act
    const composed = composeRouterConfig(base, { listeners: [], connectors: [checkoutConnector] }, [
      checkoutListener,
    ]);

    // Assess
    expect(composed).toStrictEqual(backendAgentConfig);
  });

  it('keeps entries fogbridge does not manage first, holds a listener named twice once, and sorts the rest', () => {
    // Prepare
    const kept = { name: 'operator-amqp', port: '5672', address: 'amqp' };
    const base: RouterConfig = {
      bridges: { tcpListeners: { 'operator-amqp': kept } },
      metadata: { id: 'a' },
    };

    // Act
    const composed = composeRouterConfig(base, { listeners: [paymentsListener], connectors: [] }, [
      checkoutListener,
      paymentsListener,
    ]);

    // Assess
    expect(Object.keys(composed.bridges!.tcpListeners!)).toEqual([
      'operator-amqp',
      'checkout-listener',
      'payments-listener',
    ]);
    expect(composed.metadata).toEqual({ id: 'a' });
    expect(composed.bridges!.tcpConnectors).toBeUndefined();
  });
});

describe('storedEntriesFor and the distribution sets (seed 000 distribution table)', () => {
  const service = {
    name: 'checkout',
    type: 'agent' as const,
    resource: 'fog-a',
    targetPort: 8080,
    defaultBridge: 'default-router',
    siteKey: 'fog-a',
    tags: ['checkout', 'app=shop'],
    bridgePort: 10024,
    deleted: false,
  };
  const router = (key: string, tags: string[], hubKey = 'hub') => ({
    key,
    hubKey,
    agent: { uuid: key, routerMode: 'edge' as const, tags },
    tagPrefix: 'service.iofog.org/tag',
  });

  it.each<[string, ReturnType<typeof router>, string[]]>([
    ['the hub stores the listener', router('hub', [], 'hub'), ['checkout-listener']],
    [
      'the backend stores its connector only',
      router('fog-a', ['service.iofog.org/tag: checkout']),
      ['checkout-connector'],
    ],
    [
      'a tagged agent stores nothing (its listener is in the set)',
      router('fog-b', ['service.iofog.org/tag: all']),
      [],
    ],
  ])('%s', (_title, placed, names) => {
    // Act
    const entries = storedEntriesFor(placed, service);

    // Assess
    expect([entries.listener?.name, entries.connector?.name].filter(Boolean)).toEqual(names);
  });

  it.each<[string, string[], string[]]>([
    [
      'an agent tagged all reads the every-service set only',
      ['service.iofog.org/tag: all', 'service.iofog.org/tag: x'],
      [EVERY_SERVICE_SET],
    ],
    [
      'an agent reads one set per token it selects',
      ['service.iofog.org/tag: checkout', 'service.iofog.org/tag: edge'],
      ['checkout', 'edge'],
    ],
    ['a near-miss tag selects no set', ['service.iofog.org/tag:checkout'], []],
  ])('%s', (_title, tags, sets) => {
    // Act / Assess
    expect(listenerSetsOfAgent({ routerMode: 'edge', tags }, 'service.iofog.org/tag')).toEqual(sets);
  });

  it('stores a service listener in the every-service set and in each of its tokens, never under an annotation', () => {
    // Act / Assess
    expect(listenerSetsOfService(service.tags)).toEqual([EVERY_SERVICE_SET, 'checkout']);
    expect(selectedListener(service)).toStrictEqual(checkoutListener);
    expect(selectedListener({ ...service, deleted: true })).toBeUndefined();
    expect(selectedListener({ ...service, bridgePort: null })).toBeUndefined();
    expect(
      listenerSetsOfAgent(
        { routerMode: 'none', tags: ['service.iofog.org/tag: all'] },
        'service.iofog.org/tag',
      ),
    ).toEqual([]);
  });
});
