import { createHash } from 'node:crypto';
import { canonicalJson, type RouterConfig } from './router-config.js';
import type { RouterMode } from './router-objects.js';
import { AMQP_MANAGEMENT_PORT, SSL_PROFILE_PATH } from './router-site.js';

/**
 * The router system microservice as a container: what Edgelet creates it with, apart from its config.
 * A running Datasance Router applies only `bridges` changes from a new config (it diffs them with what
 * skrouterd holds, over AMQP); everything else of the config, and every file path it names, is read
 * when the container starts. So what a router starts with is this container plus the config without
 * `bridges`, and a change to any of it reaches a running router only when Edgelet recreates the
 * container: the microservice's `rebuild`.
 */
export interface RouterContainer {
  imageId: string;
  registryId: number;
  /** An interior router binds its inter-router and edge ports on the node and dials local processes. */
  hostNetworkMode: boolean;
  portMappings: { internal: number; external: number; protocol: 'tcp' }[];
  /** One read-only mount per certificate the agent holds, where its sslProfile names the files. */
  volumeMappings: {
    hostDestination: string;
    containerDestination: string;
    accessMode: 'ro';
    type: 'volumeMount';
  }[];
  env: { key: string; value: string }[];
  capAdd: string[];
}

export interface RouterAgent {
  uuid: string;
  routerMode: Exclude<RouterMode, 'none'>;
  messagingPort: number | null;
  interRouterPort: number | null;
  edgeRouterPort: number | null;
}

/** The router container of an agent holding `certificates` (by name), from the configured image. */
export function routerContainer(
  agent: RouterAgent,
  certificates: readonly string[],
  image: { image: string; registryId: number },
): RouterContainer {
  const interior = agent.routerMode === 'interior';
  const ports = [agent.messagingPort, ...(interior ? [agent.edgeRouterPort, agent.interRouterPort] : [])];
  return {
    imageId: image.image,
    registryId: image.registryId,
    hostNetworkMode: interior,
    portMappings: ports
      .filter((port): port is number => typeof port === 'number')
      .map((port) => ({ internal: port, external: port, protocol: 'tcp' as const })),
    volumeMappings: certificates.map((name) => ({
      hostDestination: name,
      containerDestination: `${SSL_PROFILE_PATH}/${name}`,
      accessMode: 'ro' as const,
      type: 'volumeMount' as const,
    })),
    env: [
      { key: 'QDROUTERD_CONF', value: '/tmp/skrouterd.json' },
      { key: 'QDROUTERD_CONF_TYPE', value: 'json' },
      { key: 'SKUPPER_SITE_ID', value: agent.uuid },
      { key: 'SKUPPER_PLATFORM', value: 'pot' },
      { key: 'SSL_PROFILE_PATH', value: SSL_PROFILE_PATH },
    ],
    capAdd: ['NET_RAW'],
  };
}

/** What a running router reads only when it starts: its config without `bridges`. */
export function startPart(config: RouterConfig): RouterConfig {
  const { bridges: _bridges, ...rest } = config;
  return rest;
}

/**
 * A digest of everything a router starts with (the container and the config's start part): two
 * configs with the same digest differ at most in `bridges`, which a running router applies itself.
 * Certificate contents are not in it: the Router reloads its TLS files from the mounted folders.
 */
export function routerStartDigest(config: RouterConfig, container: RouterContainer): string {
  return createHash('sha256')
    .update(canonicalJson({ config: startPart(config), container }))
    .digest('hex');
}

/**
 * Why a router config is not yet one a Router can run, or undefined when it is: it must name the agent
 * and its mode (without them skrouterd runs standalone), hold the management listener the Router
 * applies every later change through, and have been computed with every certificate the agent's links
 * need (`needed`), so that its links are there and each TLS profile it names is a mounted certificate.
 * A router started from less would stay so: only `bridges` reach it until it is rebuilt.
 */
export function incompleteRouterConfig(
  config: RouterConfig,
  agent: Pick<RouterAgent, 'uuid' | 'routerMode'>,
  held: ReadonlySet<string>,
  needed: readonly string[],
): string | undefined {
  const metadata = config.metadata as { id?: unknown; mode?: unknown } | undefined;
  // Its mode may lag a change of the agent's (until the reconcile rewrites it): still a router that runs.
  if (metadata?.id !== agent.uuid || (metadata.mode !== 'edge' && metadata.mode !== 'interior')) {
    return `its identity (metadata id ${agent.uuid}, mode ${agent.routerMode}) is not written yet`;
  }
  const listeners = Object.values(
    (config.listeners ?? {}) as Record<string, { port?: unknown; sslProfile?: unknown }>,
  );
  if (!listeners.some((listener) => listener.port === AMQP_MANAGEMENT_PORT && !listener.sslProfile)) {
    return `it has no management listener on port ${AMQP_MANAGEMENT_PORT} yet`;
  }
  const missing = needed.filter((name) => !held.has(name));
  if (missing.length > 0) return `it waits for certificate ${missing.join(', ')}`;
  const profiles = (config.sslProfiles ?? {}) as Record<string, { certFile?: unknown }>;
  const unwritten = needed.filter((name) => !profiles[name]);
  if (unwritten.length > 0) return `its links with certificate ${unwritten.join(', ')} are not written yet`;
  const links = [
    ...listeners,
    ...Object.values((config.connectors ?? {}) as Record<string, { sslProfile?: unknown }>),
  ];
  for (const link of links) {
    const profile = typeof link.sslProfile === 'string' ? link.sslProfile : undefined;
    if (profile === undefined) continue;
    const files = profiles[profile];
    if (!files) return `a link names TLS profile ${profile}, which it does not define`;
    if (files.certFile !== undefined && !held.has(profile)) {
      return `a link names TLS profile ${profile}, whose certificate is not mounted`;
    }
  }
  return undefined;
}
