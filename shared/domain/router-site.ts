import { routerPortsOf } from './agent-schema.js';
import { DEFAULT_ROUTER, hubRouterKey } from './placement.js';
import type { RouterMode } from './router-objects.js';

/**
 * Everything of a router's config besides the service bridges (the reference's
 * `_getRouterMicroserviceConfig`): its identity and mode, the AMQP management listener the Datasance
 * Router applies changes through, the TLS listeners an interior router offers, the links to its
 * upstream routers, and the TLS profiles as file paths under the mounted certificate folders. Pure:
 * the caller says which certificates exist, and a listener or connector that needs a missing one is
 * left out rather than pointing at a profile the router cannot load.
 */

/** Where the router container finds each certificate folder (`<profile>/{ca.crt,tls.crt,tls.key}`). */
export const SSL_PROFILE_PATH = '/etc/skupper-router-certs';
/** The CA bundle of the router image, for profiles that only verify public servers. */
export const SYSTEM_CA_BUNDLE = '/etc/pki/tls/certs/ca-bundle.crt';
/** The Router applies every change over AMQP on this port, without TLS (its management link). */
export const AMQP_MANAGEMENT_PORT = 5672;

export const routerSiteServerCertificate = (agentToken: string) => `router-site-server-${agentToken}`;
export const routerLocalServerCertificate = (agentToken: string) => `router-local-server-${agentToken}`;

export interface SiteListener {
  name: string;
  role: 'normal' | 'inter-router' | 'edge';
  host: string;
  port: number;
  authenticatePeer?: boolean;
  saslMechanisms?: string;
  sslProfile?: string;
}

export interface SiteConnector {
  name: string;
  role: 'inter-router' | 'edge';
  host: string;
  port: string;
  sslProfile: string;
}

export interface SslProfile {
  name: string;
  caCertFile: string;
  certFile?: string;
  privateKeyFile?: string;
}

export interface RouterSiteConfig {
  addresses: Record<string, { prefix: string; distribution: string }>;
  connectors: Record<string, SiteConnector>;
  listeners: Record<string, SiteListener>;
  logConfig: Record<string, { enable: string; module: string }>;
  metadata: { helloMaxAgeSeconds: string; id: string; mode: 'interior' | 'edge' };
  siteConfig: { name: string; namespace: string; platform: string; version: string };
  sslProfiles: Record<string, SslProfile>;
}

/** The top-level keys this module owns; `bridges` belongs to the service reconcile. */
export const SITE_CONFIG_KEYS = [
  'addresses',
  'connectors',
  'listeners',
  'logConfig',
  'metadata',
  'siteConfig',
  'sslProfiles',
] as const;

export interface SiteAgent {
  uuid: string;
  /** The agent's name as its certificates carry it. */
  token: string;
  routerMode: Exclude<RouterMode, 'none'>;
  messagingPort: number;
  interRouterPort: number;
  edgeRouterPort: number;
}

/** A router this one dials: its router key, the host to dial and its ports. */
export interface Upstream {
  key: string;
  host: string;
  interRouterPort: number;
  edgeRouterPort: number;
}

/** A router an agent may name as its upstream, as far as dialling it goes. */
export interface UpstreamCandidate {
  uuid: string;
  host: string | null;
  routerMode: RouterMode;
  interRouterPort: number | null;
  edgeRouterPort: number | null;
}

/** The default router as upstreams dial it: where it listens, and the agent it is (null: standalone). */
export interface DefaultRouterLinkEnd {
  host: string;
  interRouterPort: number | null;
  edgeRouterPort: number | null;
  agentUuid: string | null;
}

/**
 * The routers an agent dials, in the order it names them — the one rule both its router config and the
 * topology follow: `default-router` is the default router as registered (the system agent's router, or
 * the one PUT /api/v3/router describes; never the agent itself), any other key an agent router that is
 * interior and has a host (not the agent itself). A router without a port listens on the default one.
 */
export function upstreamRouters(
  agent: { uuid: string; upstreamRouters: readonly string[] },
  defaultRouter: DefaultRouterLinkEnd | undefined,
  agentRouter: (uuid: string) => UpstreamCandidate | undefined,
): Upstream[] {
  const ports = (router: { interRouterPort: number | null; edgeRouterPort: number | null }) => {
    const { interRouterPort, edgeRouterPort } = routerPortsOf(router);
    return { interRouterPort, edgeRouterPort };
  };
  return agent.upstreamRouters.flatMap((key): Upstream[] => {
    if (key === DEFAULT_ROUTER) {
      const hubKey = hubRouterKey(defaultRouter);
      if (!defaultRouter || !hubKey || hubKey === agent.uuid) return [];
      return [{ key: hubKey, host: defaultRouter.host, ...ports(defaultRouter) }];
    }
    const upstream = agentRouter(key);
    if (!upstream?.host || upstream.routerMode !== 'interior' || upstream.uuid === agent.uuid) return [];
    return [{ key: upstream.uuid, host: upstream.host, ...ports(upstream) }];
  });
}

function profile(name: string): SslProfile {
  return {
    name,
    caCertFile: `${SSL_PROFILE_PATH}/${name}/ca.crt`,
    certFile: `${SSL_PROFILE_PATH}/${name}/tls.crt`,
    privateKeyFile: `${SSL_PROFILE_PATH}/${name}/tls.key`,
  };
}

const tlsListener = (
  name: string,
  role: SiteListener['role'],
  port: number,
  sslProfile: string,
): SiteListener => ({
  name,
  role,
  host: '0.0.0.0',
  port,
  authenticatePeer: true,
  saslMechanisms: 'EXTERNAL',
  sslProfile,
});

export function buildRouterSiteConfig(input: {
  agent: SiteAgent;
  upstreams: readonly Upstream[];
  /** Names of the agent's certificates that exist (issued and mounted). */
  certificates: ReadonlySet<string>;
  namespace: string;
}): RouterSiteConfig {
  const { agent } = input;
  const site = routerSiteServerCertificate(agent.token);
  const local = routerLocalServerCertificate(agent.token);
  const hasSite = input.certificates.has(site);
  const hasLocal = input.certificates.has(local);
  const listeners: Record<string, SiteListener> = {};
  const add = (listener: SiteListener) => {
    listeners[listener.name] = listener;
  };
  add({ name: `${agent.uuid}-amqp`, role: 'normal', host: '0.0.0.0', port: AMQP_MANAGEMENT_PORT });
  if (hasLocal) add(tlsListener(`${agent.uuid}-amqps`, 'normal', agent.messagingPort, local));
  if (agent.routerMode === 'interior' && hasSite) {
    add(tlsListener(`${agent.uuid}-inter-router`, 'inter-router', agent.interRouterPort, site));
    add(tlsListener(`${agent.uuid}-edge`, 'edge', agent.edgeRouterPort, site));
  }
  const connectors: Record<string, SiteConnector> = {};
  if (hasSite) {
    for (const upstream of input.upstreams) {
      const edge = agent.routerMode === 'edge';
      connectors[upstream.key] = {
        name: upstream.key,
        role: edge ? 'edge' : 'inter-router',
        host: upstream.host,
        port: String(edge ? upstream.edgeRouterPort : upstream.interRouterPort),
        sslProfile: site,
      };
    }
  }
  const sslProfiles: Record<string, SslProfile> = {
    'system-default': { name: 'system-default', caCertFile: SYSTEM_CA_BUNDLE },
  };
  for (const name of [site, local]) if (input.certificates.has(name)) sslProfiles[name] = profile(name);
  return {
    addresses: { mc: { prefix: 'mc', distribution: 'multicast' } },
    connectors,
    listeners,
    logConfig: { ROUTER_CORE: { enable: 'error+', module: 'ROUTER_CORE' } },
    metadata: { helloMaxAgeSeconds: '3', id: agent.uuid, mode: agent.routerMode },
    siteConfig: { name: agent.uuid, namespace: input.namespace, platform: 'edgelet', version: 'pot' },
    sslProfiles,
  };
}

/**
 * The name an agent's certificates carry: its name when that is already a DNS label, else the name
 * folded to one (lower case, runs of other characters to one dash, at most 48 characters), as the
 * reference names its NATS artefacts. One token for every artefact of the agent.
 */
export function agentCertificateToken(agentName: string): string {
  if (/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(agentName)) return agentName;
  const folded = agentName
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 48)
    .replace(/-$/, '');
  return folded || 'default';
}

/** The fleet's certificate authorities: router site and local, NATS site and local. */
export const ROUTER_SITE_CA = 'router-site-ca';
export const ROUTER_LOCAL_CA = 'default-router-local-ca';
export const NATS_SITE_CA = 'nats-site-ca';
export const NATS_LOCAL_CA = 'default-nats-local-ca';
export const FLEET_CAS = [ROUTER_SITE_CA, ROUTER_LOCAL_CA, NATS_SITE_CA, NATS_LOCAL_CA] as const;

/** Names an agent's router reaches itself by on its node (the local server certificate's SANs). */
const LOCAL_NAMES = [
  'localhost',
  '127.0.0.1',
  'host.docker.internal',
  'host.containers.internal',
  'iofog',
  'service.local',
  'router.default.svc.bridge.local',
  'nats.default.svc.bridge.local',
];

export interface CertificateSpec {
  name: string;
  /** The fleet CA that signs it. */
  ca: string;
  commonName: string;
  hosts: string[];
  /** Days it is valid (the router's five years when absent). */
  validityDays?: number;
}

/**
 * An agent's NATS certificates: the server certificate for routes and leaf
 * links (signed by `nats-site-ca`, SAN the host) and the MQTT certificate for local clients (signed by
 * `default-nats-local-ca`), 60 months each; none without a NATS process.
 */
export function natsCertificateSpecs(agent: {
  name: string;
  host: string | null;
  natsMode: string;
}): CertificateSpec[] {
  if (agent.natsMode === 'none') return [];
  const token = agentCertificateToken(agent.name);
  const host = agent.host ?? 'localhost';
  const validityDays = 60 * 30.44;
  return [
    {
      name: `nats-server-${token}`,
      ca: NATS_SITE_CA,
      commonName: `nats-server-${token}`,
      hosts: [host],
      validityDays,
    },
    {
      name: `nats-mqtt-server-${token}`,
      ca: NATS_LOCAL_CA,
      commonName: `nats-mqtt-server-${token}`,
      hosts: [
        ...new Set([
          'localhost',
          '127.0.0.1',
          'nats.default.svc.bridge.local',
          ...(agent.host ? [agent.host] : []),
        ]),
      ],
      validityDays,
    },
  ];
}

/**
 * The router certificates an agent holds: the site server certificate for
 * links between routers (SAN: the agent's host) and the local server certificate for clients on its
 * node; both carry the agent uuid as CN. None for an agent without a router.
 */
export function routerCertificateSpecs(
  agent: { uuid: string; name: string; host: string | null; routerMode: RouterMode },
  /** Further names other routers dial it by (the default router's registered host, for its agent). */
  dialledAs: readonly string[] = [],
): CertificateSpec[] {
  if (agent.routerMode === 'none') return [];
  const token = agentCertificateToken(agent.name);
  const siteHosts = [...new Set([agent.host ?? 'localhost', ...dialledAs])];
  return [
    {
      name: routerSiteServerCertificate(token),
      ca: ROUTER_SITE_CA,
      commonName: agent.uuid,
      hosts: siteHosts,
    },
    {
      name: routerLocalServerCertificate(token),
      ca: ROUTER_LOCAL_CA,
      commonName: agent.uuid,
      hosts: [...new Set([...LOCAL_NAMES, ...(agent.host ? [agent.host] : [])])],
    },
  ];
}
