import { describe, expect, it } from 'vitest';
import type { RouterConfig } from '../../shared/domain/router-config.js';
import {
  incompleteRouterConfig,
  routerContainer,
  routerStartDigest,
} from '../../shared/domain/router-microservice.js';
import { buildRouterSiteConfig } from '../../shared/domain/router-site.js';
import { type SiteStateFacts, siteState } from '../../shared/domain/service-sites.js';

/**
 * The router microservice as a running router sees it: what it starts with (the container and every
 * part of its config but `bridges`, which the Datasance Router applies live), when its config is one a
 * Router can run, and the per-site state a service shows for an agent.
 */

const IMAGE = { image: 'ghcr.io/datasance/router:3.9.0', registryId: 1 };
const SITE = 'router-site-server-fog-a';
const LOCAL = 'router-local-server-fog-a';
const edge = {
  uuid: 'fog-a',
  routerMode: 'edge' as const,
  messagingPort: 5671,
  interRouterPort: 55671,
  edgeRouterPort: 45671,
};

function siteOf(
  agent: { routerMode: 'edge' | 'interior'; edgeRouterPort?: number },
  certificates: string[],
  upstreamHost = 'hub.example.com',
): RouterConfig {
  return {
    ...buildRouterSiteConfig({
      agent: {
        ...edge,
        token: 'fog-a',
        routerMode: agent.routerMode,
        edgeRouterPort: agent.edgeRouterPort ?? 45671,
      },
      upstreams: [{ key: 'H', host: upstreamHost, interRouterPort: 55671, edgeRouterPort: 45671 }],
      certificates: new Set(certificates),
      namespace: 'default',
    }),
    bridges: { tcpListeners: {}, tcpConnectors: {} },
  };
}

const withBridges = (config: RouterConfig, port: string): RouterConfig => ({
  ...config,
  bridges: {
    tcpListeners: { 'checkout-listener': { name: 'checkout-listener', port, address: 'checkout' } },
    tcpConnectors: {},
  },
});

describe('routerContainer', () => {
  it('an edge router: its messaging port, one read-only mount per certificate, the Router environment', () => {
    // Act
    const container = routerContainer(edge, [SITE, LOCAL], IMAGE);

    // Assess
    expect(container).toEqual({
      imageId: IMAGE.image,
      registryId: 1,
      hostNetworkMode: false,
      portMappings: [{ internal: 5671, external: 5671, protocol: 'tcp' }],
      volumeMappings: [SITE, LOCAL].map((name) => ({
        hostDestination: name,
        containerDestination: `/etc/skupper-router-certs/${name}`,
        accessMode: 'ro',
        type: 'volumeMount',
      })),
      env: [
        { key: 'QDROUTERD_CONF', value: '/tmp/skrouterd.json' },
        { key: 'QDROUTERD_CONF_TYPE', value: 'json' },
        { key: 'SKUPPER_SITE_ID', value: 'fog-a' },
        { key: 'SKUPPER_PLATFORM', value: 'pot' },
        { key: 'SSL_PROFILE_PATH', value: '/etc/skupper-router-certs' },
      ],
      capAdd: ['NET_RAW'],
    });
  });

  it('an interior router: on the host network, with its edge and inter-router ports', () => {
    // Act
    const container = routerContainer({ ...edge, routerMode: 'interior' }, [], IMAGE);

    // Assess
    expect(container.hostNetworkMode).toBe(true);
    expect(container.portMappings.map((port) => port.internal)).toEqual([5671, 45671, 55671]);
    expect(container.volumeMappings).toEqual([]);
  });
});

describe('routerStartDigest: what needs a rebuild and what a running router applies itself', () => {
  const before = siteOf({ routerMode: 'edge' }, [SITE, LOCAL]);
  const container = routerContainer(edge, [SITE, LOCAL], IMAGE);
  const digest = routerStartDigest(before, container);

  it.each<{
    change: string;
    config: RouterConfig;
    container?: ReturnType<typeof routerContainer>;
    same: boolean;
  }>([
    { change: 'a bridge added', config: withBridges(before, '10024'), same: true },
    {
      change: "a bridge's port changed",
      config: withBridges(withBridges(before, '10024'), '10025'),
      same: true,
    },
    {
      change: 'the upstream host moved',
      config: siteOf({ routerMode: 'edge' }, [SITE, LOCAL], 'hub2.example.com'),
      same: false,
    },
    {
      change: 'the router mode changed',
      config: siteOf({ routerMode: 'interior' }, [SITE, LOCAL]),
      same: false,
    },
    { change: 'a certificate was not held', config: siteOf({ routerMode: 'edge' }, [LOCAL]), same: false },
    {
      change: 'the image changed',
      config: before,
      container: routerContainer(edge, [SITE, LOCAL], { ...IMAGE, image: 'ghcr.io/datasance/router:3.9.1' }),
      same: false,
    },
    {
      change: 'the messaging port changed',
      config: before,
      container: routerContainer({ ...edge, messagingPort: 5999 }, [SITE, LOCAL], IMAGE),
      same: false,
    },
    { change: 'nothing (keys in another order)', config: JSON.parse(JSON.stringify(before)), same: true },
  ])('$change: same start $same', ({ config, container: changed, same }) => {
    // Act
    const next = routerStartDigest(config, changed ?? container);

    // Assess
    expect(next === digest).toBe(same);
  });
});

describe('incompleteRouterConfig: a config a Router can start from', () => {
  const needed = [SITE, LOCAL];
  const held = new Set(needed);
  const complete = siteOf({ routerMode: 'edge' }, needed);

  it.each<{ case: string; config: RouterConfig; held?: Set<string>; reason: string | undefined }>([
    { case: 'the complete site part', config: complete, reason: undefined },
    {
      case: 'nothing written yet',
      config: {},
      reason: 'its identity (metadata id fog-a, mode edge) is not written yet',
    },
    {
      case: 'no management listener',
      config: { ...complete, listeners: {} },
      reason: 'it has no management listener on port 5672 yet',
    },
    {
      case: 'a certificate not issued yet',
      config: siteOf({ routerMode: 'edge' }, [LOCAL]),
      held: new Set([LOCAL]),
      reason: `it waits for certificate ${SITE}`,
    },
    {
      case: 'computed before its certificates were issued',
      config: siteOf({ routerMode: 'edge' }, []),
      reason: `its links with certificate ${SITE}, ${LOCAL} are not written yet`,
    },
    {
      case: 'a mode that lags the agent (still a router that runs)',
      config: siteOf({ routerMode: 'interior' }, needed),
      reason: undefined,
    },
  ])('$case', ({ config, held: holding, reason }) => {
    // Act
    const found = incompleteRouterConfig(
      config,
      { uuid: 'fog-a', routerMode: 'edge' },
      holding ?? held,
      needed,
    );

    // Assess
    expect(found).toBe(reason);
  });
});

describe('siteState: one rule for a site, per service and in the topology', () => {
  const now = Date.parse('2026-12-04T10:00:00Z');
  const since = '2026-12-04T09:59:00.000Z';
  const heard = now - 5_000;

  it.each<{ case: string; facts: SiteStateFacts; state: string; waiting: string | null }>([
    { case: 'never heard from, nothing waiting', facts: {}, state: 'offline', waiting: null },
    {
      case: 'its first config not written yet',
      facts: { firstConfig: true, waitingSince: since },
      state: 'new',
      waiting: since,
    },
    {
      case: 'first config pending, agent heard from',
      facts: { firstConfig: true, waitingSince: since, lastActive: heard },
      state: 'new',
      waiting: since,
    },
    {
      case: 'acknowledged everything',
      facts: { lastActive: heard, configVersion: 7, acknowledgedVersion: 7 },
      state: 'applied',
      waiting: null,
    },
    {
      case: 'acknowledged an older config version',
      facts: { lastActive: heard, configVersion: 8, acknowledgedVersion: 7 },
      state: 'pending',
      waiting: null,
    },
    {
      case: 'a rebuild owed, not acknowledged',
      facts: { lastActive: heard, rebuildPending: true, configVersion: 7, acknowledgedVersion: 7 },
      state: 'pending',
      waiting: null,
    },
    {
      case: 'a marker waits, heard from within the threshold',
      facts: { waitingSince: since, lastActive: now - 59_000 },
      state: 'pending',
      waiting: since,
    },
    {
      case: 'a marker waits, silent past the threshold',
      facts: { waitingSince: since, lastActive: now - 61_000 },
      state: 'offline',
      waiting: since,
    },
    {
      case: 'a marker waits, never heard from',
      facts: { waitingSince: since },
      state: 'offline',
      waiting: since,
    },
    {
      case: 'nothing waits, silent past the threshold (it applied before falling silent)',
      facts: { lastActive: now - 61_000 },
      state: 'applied',
      waiting: null,
    },
  ])('$case: $state', ({ facts, state, waiting }) => {
    // Act
    const found = siteState(facts, now, 60_000);

    // Assess
    expect(found).toEqual({
      state,
      since: waiting,
      lastSeen: facts.lastActive === undefined ? null : new Date(facts.lastActive).toISOString(),
    });
  });
});
