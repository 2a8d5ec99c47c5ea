import { describe, expect, it } from 'vitest';
import {
  agentCertificateToken,
  buildRouterSiteConfig,
  routerCertificateSpecs,
} from '../../shared/domain/router-site.js';

/**
 * An agent router's own config (CONTROL-PLANE.md §10.2 worked examples 1 and 2, with the decisions of
 * §19: platform `edgelet`, no local-agent profile): identity, the management listener, TLS listeners of
 * an interior router, links to upstreams, TLS profiles as file paths.
 */

const profile = (name: string) => ({
  name,
  caCertFile: `/etc/skupper-router-certs/${name}/ca.crt`,
  certFile: `/etc/skupper-router-certs/${name}/tls.crt`,
  privateKeyFile: `/etc/skupper-router-certs/${name}/tls.key`,
});
const common = {
  addresses: { mc: { prefix: 'mc', distribution: 'multicast' } },
  logConfig: { ROUTER_CORE: { enable: 'error+', module: 'ROUTER_CORE' } },
};

describe('buildRouterSiteConfig', () => {
  it('worked example 1: the interior system agent hub (uuid H), ports 5671 / 55671 / 45671', () => {
    // Act
    const config = buildRouterSiteConfig({
      agent: {
        uuid: 'H',
        token: 'hub',
        routerMode: 'interior',
        messagingPort: 5671,
        interRouterPort: 55671,
        edgeRouterPort: 45671,
      },
      upstreams: [],
      certificates: new Set(['router-site-server-hub', 'router-local-server-hub']),
      namespace: 'default',
    });

    // Assess
    expect(config).toEqual({
      ...common,
      connectors: {},
      listeners: {
        'H-amqp': { host: '0.0.0.0', name: 'H-amqp', port: 5672, role: 'normal' },
        'H-amqps': {
          host: '0.0.0.0',
          name: 'H-amqps',
          port: 5671,
          role: 'normal',
          authenticatePeer: true,
          saslMechanisms: 'EXTERNAL',
          sslProfile: 'router-local-server-hub',
        },
        'H-inter-router': {
          host: '0.0.0.0',
          name: 'H-inter-router',
          port: 55671,
          role: 'inter-router',
          authenticatePeer: true,
          saslMechanisms: 'EXTERNAL',
          sslProfile: 'router-site-server-hub',
        },
        'H-edge': {
          host: '0.0.0.0',
          name: 'H-edge',
          port: 45671,
          role: 'edge',
          authenticatePeer: true,
          saslMechanisms: 'EXTERNAL',
          sslProfile: 'router-site-server-hub',
        },
      },
      metadata: { helloMaxAgeSeconds: '3', id: 'H', mode: 'interior' },
      siteConfig: { name: 'H', namespace: 'default', platform: 'edgelet', version: 'pot' },
      sslProfiles: {
        'system-default': { name: 'system-default', caCertFile: '/etc/pki/tls/certs/ca-bundle.crt' },
        'router-site-server-hub': profile('router-site-server-hub'),
        'router-local-server-hub': profile('router-local-server-hub'),
      },
    });
  });

  it('worked example 2: the edge agent fog-a (uuid A) dials the system agent H on its edge port', () => {
    // Act
    const config = buildRouterSiteConfig({
      agent: {
        uuid: 'A',
        token: 'fog-a',
        routerMode: 'edge',
        messagingPort: 5671,
        interRouterPort: 55671,
        edgeRouterPort: 45671,
      },
      upstreams: [{ key: 'H', host: 'hub.example.com', interRouterPort: 55671, edgeRouterPort: 45671 }],
      certificates: new Set(['router-site-server-fog-a', 'router-local-server-fog-a']),
      namespace: 'default',
    });

    // Assess
    expect(config.metadata).toEqual({ helloMaxAgeSeconds: '3', id: 'A', mode: 'edge' });
    expect(Object.keys(config.listeners)).toEqual(['A-amqp', 'A-amqps']);
    expect(config.connectors).toEqual({
      H: {
        name: 'H',
        role: 'edge',
        host: 'hub.example.com',
        port: '45671',
        sslProfile: 'router-site-server-fog-a',
      },
    });
    expect(Object.keys(config.sslProfiles)).toEqual([
      'system-default',
      'router-site-server-fog-a',
      'router-local-server-fog-a',
    ]);
  });

  it('an interior agent links to an interior upstream on its inter-router port; a Kubernetes default router is named default-router', () => {
    // Act
    const config = buildRouterSiteConfig({
      agent: {
        uuid: 'B',
        token: 'b',
        routerMode: 'interior',
        messagingPort: 5671,
        interRouterPort: 55671,
        edgeRouterPort: 45671,
      },
      upstreams: [
        { key: 'default-router', host: 'router.iofog.svc', interRouterPort: 55672, edgeRouterPort: 45672 },
      ],
      certificates: new Set(['router-site-server-b', 'router-local-server-b']),
      namespace: 'iofog',
    });

    // Assess
    expect(config.connectors).toEqual({
      'default-router': {
        name: 'default-router',
        role: 'inter-router',
        host: 'router.iofog.svc',
        port: '55672',
        sslProfile: 'router-site-server-b',
      },
    });
    expect(config.siteConfig.namespace).toBe('iofog');
  });

  it('without certificates yet: only the management listener, no links, only the system profile', () => {
    // Act
    const config = buildRouterSiteConfig({
      agent: {
        uuid: 'A',
        token: 'fog-a',
        routerMode: 'edge',
        messagingPort: 5671,
        interRouterPort: 55671,
        edgeRouterPort: 45671,
      },
      upstreams: [{ key: 'H', host: 'hub.example.com', interRouterPort: 55671, edgeRouterPort: 45671 }],
      certificates: new Set(),
      namespace: 'default',
    });

    // Assess: nothing names a profile the router could not load
    expect(config.listeners).toEqual({
      'A-amqp': { host: '0.0.0.0', name: 'A-amqp', port: 5672, role: 'normal' },
    });
    expect(config.connectors).toEqual({});
    expect(Object.keys(config.sslProfiles)).toEqual(['system-default']);
  });
});

describe('routerCertificateSpecs', () => {
  it('the site server (SAN the host) and the local server (node-local names and the host), CN the uuid', () => {
    // Act
    const specs = routerCertificateSpecs({ uuid: 'A', name: 'fog-a', host: '10.0.0.5', routerMode: 'edge' });

    // Assess
    expect(specs).toEqual([
      { name: 'router-site-server-fog-a', ca: 'router-site-ca', commonName: 'A', hosts: ['10.0.0.5'] },
      {
        name: 'router-local-server-fog-a',
        ca: 'default-router-local-ca',
        commonName: 'A',
        hosts: [
          'localhost',
          '127.0.0.1',
          'host.docker.internal',
          'host.containers.internal',
          'iofog',
          'service.local',
          'router.default.svc.bridge.local',
          'nats.default.svc.bridge.local',
          '10.0.0.5',
        ],
      },
    ]);
  });

  it('none for an agent without a router', () => {
    // Act / Assess
    expect(
      routerCertificateSpecs({ uuid: 'A', name: 'fog-a', host: '10.0.0.5', routerMode: 'none' }),
    ).toEqual([]);
  });
});

describe('agentCertificateToken', () => {
  it.each([
    ['fog-a', 'fog-a'],
    ['Edge Gateway #1', 'edge-gateway-1'],
    ['--x--', 'x'],
    ['東京', 'default'],
    ['a'.repeat(70), 'a'.repeat(48)],
  ])('%s → %s', (name, token) => {
    // Act / Assess
    expect(agentCertificateToken(name)).toBe(token);
  });
});
