import {
  agentDistributionTokens,
  agentSelectsService,
  DISTRIBUTION_ALL,
  serviceDistributionTokens,
} from './distribution.js';
import {
  buildTcpConnector,
  buildTcpListener,
  type ConnectorBackend,
  connectorOnDefaultRouter,
  type RouterMode,
  type TcpConnector,
  type TcpListener,
} from './router-objects.js';
import type { ServiceType } from './service.js';

/**
 * Where a service's router objects go: which router is its
 * hub, which holds its connector, and so which listeners and connectors a given router must hold. Pure;
 * every reconciler, check and command asks this module instead of deriving it again.
 */

/**
 * The default router. As a `defaultBridge` it means "the hub router, whichever it is"; as a router key
 * it is the standalone default router registered by PUT /api/v3/router (no agent behind it).
 */
export const DEFAULT_ROUTER = 'default-router';

/** The uuid under which an agent's router runs as one of its microservices (what Edgelet is sent). */
export const routerMicroserviceUuid = (agentUuid: string) => `${agentUuid}${ROUTER_MICROSERVICE_SUFFIX}`;
const ROUTER_MICROSERVICE_SUFFIX = '-router';
const NATS_MICROSERVICE_SUFFIX = '-nats';
export const natsMicroserviceUuid = (agentUuid: string) => `${agentUuid}${NATS_MICROSERVICE_SUFFIX}`;
/** The NATS hub as an upstream of NATS leaves (the operator's, or the system agent's server). */
export const DEFAULT_NATS_HUB = 'default-nats-hub';

/**
 * Identifiers fogbridge gives a meaning of its own, so a client may not name its objects with them: an
 * agent uuid `default-router` would be taken for the standalone default router, and a microservice uuid
 * `<agent>-router` for that agent's router. The reason, or undefined when the identifier is free.
 */
export function reservedAgentUuid(uuid: string): string | undefined {
  const lower = uuid.toLowerCase();
  if (lower === DEFAULT_ROUTER) return `is reserved: ${DEFAULT_ROUTER} names the default router`;
  if (lower === DEFAULT_NATS_HUB) return `is reserved: ${DEFAULT_NATS_HUB} names the NATS hub`;
  return undefined;
}

/** Every microservice uuid but an agent's system ones: its router's and its NATS server's. */
export function reservedMicroserviceUuid(uuid: string): string | undefined {
  const lower = uuid.toLowerCase();
  for (const [suffix, what] of [
    [ROUTER_MICROSERVICE_SUFFIX, 'router'],
    [NATS_MICROSERVICE_SUFFIX, 'NATS'],
  ] as const) {
    if (lower.endsWith(suffix))
      return `is reserved: a uuid ending in ${suffix} names an agent's ${what} microservice`;
  }
  return undefined;
}

/** The default router as registered: standalone, or an agent's router (the promoted system agent). */
export interface DefaultRouterRef {
  agentUuid: string | null;
}

/** The router key whose config is the hub document, or undefined while no default router exists. */
export function hubRouterKey(defaultRouter: DefaultRouterRef | undefined): string | undefined {
  if (!defaultRouter) return undefined;
  return defaultRouter.agentUuid ?? DEFAULT_ROUTER;
}

/** A router key as stored (`default-router` meaning the hub) resolved to the router it names now. */
export function resolveRouterKey(key: string, hubKey: string | undefined): string | undefined {
  return key === DEFAULT_ROUTER ? hubKey : key;
}

/** The router that owns a service's hub listener: its defaultBridge, resolved. */
export function serviceHubKey(
  service: { defaultBridge: string },
  hubKey: string | undefined,
): string | undefined {
  return resolveRouterKey(service.defaultBridge, hubKey);
}

/** The router that holds a service's connector, resolved (undefined: none known yet, or no hub). */
export function connectorRouterOf(
  service: { siteKey: string | null },
  hubKey: string | undefined,
): string | undefined {
  return service.siteKey === null ? undefined : resolveRouterKey(service.siteKey, hubKey);
}

/** The connector router as stored: the default router for k8s/external, else the backend's agent. */
export function connectorRouterFor(type: ServiceType, backendAgentUuid: string | undefined): string {
  return connectorOnDefaultRouter(type) ? DEFAULT_ROUTER : backendAgentUuid!;
}

/**
 * On a remote control plane clients reach a service on the hub router at its bridge port: servicePort is
 * the assigned bridgePort and serviceEndpoint the hub router's host. On Kubernetes both are the user's /
 * the LoadBalancer's and stay as they are.
 */
export function assignedAddress(
  controlPlane: 'kubernetes' | 'remote',
  service: { bridgePort: number | null; servicePort?: number | undefined; serviceEndpoint: string | null },
  hubHost: string | null,
): { servicePort: number | undefined; serviceEndpoint: string | null } {
  if (controlPlane === 'kubernetes') {
    return { servicePort: service.servicePort, serviceEndpoint: service.serviceEndpoint };
  }
  return { servicePort: service.bridgePort ?? undefined, serviceEndpoint: hubHost };
}

/** The owner id of a service's bridge-port claim: one per incarnation of the name. */
export function portOwner(service: { name: string; incarnation: number }): string {
  return `${service.name}#${service.incarnation}`;
}

export function parsePortOwner(owner: string): { name: string; incarnation: number } {
  const hash = owner.lastIndexOf('#');
  return { name: owner.slice(0, hash), incarnation: Number(owner.slice(hash + 1)) };
}

/** A router as placement sees it. */
export interface RouterView {
  key: string;
  /** The hub router's key (undefined while no default router exists). */
  hubKey: string | undefined;
  /** The agent whose router this is (absent for the standalone default router). */
  agent?: { uuid: string; routerMode: RouterMode; tags: readonly string[] } | undefined;
  /** SERVICE_ANNOTATION_TAG: the prefix of agent distribution tags. */
  tagPrefix: string;
}

/** What placement needs of a service row. */
export interface PlacedService {
  name: string;
  type: ServiceType;
  resource: string;
  targetPort: number;
  defaultBridge: string;
  siteKey: string | null;
  tags: readonly string[];
  bridgePort: number | null;
  deleted: boolean;
}

/** The microservice a `microservice` service dials, as it is now. */
export interface PlacedMicroservice {
  uuid: string;
  name: string;
  application: string;
  agentUuid: string;
  hostNetworkMode: boolean;
}

export interface RouterEntries {
  listener?: TcpListener;
  connector?: TcpConnector;
}

/** Whether `router` is the hub that must hold the service's listener. */
export function isHubFor(router: RouterView, service: Pick<PlacedService, 'defaultBridge'>): boolean {
  return serviceHubKey(service, router.hubKey) === router.key;
}

/** Whether the agent behind `router` selects the service by its distribution tags. */
export function selectsService(router: RouterView, service: Pick<PlacedService, 'tags'>): boolean {
  if (!router.agent || router.agent.routerMode === 'none') return false;
  return agentSelectsService(agentDistributionTokens(router.agent.tags, router.tagPrefix), service.tags);
}

/** The backend the connector dials from `router`, or undefined when the backend is not reached there. */
function backendOn(
  router: RouterView,
  service: PlacedService,
  microservice: PlacedMicroservice | undefined,
): ConnectorBackend | undefined {
  if (connectorRouterOf(service, router.hubKey) !== router.key) return undefined;
  switch (service.type) {
    case 'k8s':
    case 'external':
      return { type: service.type, resource: service.resource };
    case 'agent':
      if (router.agent?.uuid !== service.resource) return undefined;
      return { type: 'agent', agentUuid: router.agent.uuid, routerMode: router.agent.routerMode };
    case 'microservice':
      if (!router.agent || !microservice || microservice.agentUuid !== router.agent.uuid) return undefined;
      return {
        type: 'microservice',
        microserviceUuid: microservice.uuid,
        applicationName: microservice.application,
        microserviceName: microservice.name,
        hostNetworkMode: microservice.hostNetworkMode,
        routerMode: router.agent.routerMode,
      };
  }
}

/**
 * The listener and connector `router` must hold for `service`: a listener where it is the hub or its
 * tags select the service (once a bridge port is assigned), a connector where the backend is reached.
 * A deleted service is held nowhere.
 */
export function entriesFor(
  router: RouterView,
  service: PlacedService,
  microservice?: PlacedMicroservice,
): RouterEntries {
  if (service.deleted) return {};
  const entries: RouterEntries = {};
  if (service.bridgePort !== null && (isHubFor(router, service) || selectsService(router, service))) {
    entries.listener = buildTcpListener(service.name, service.bridgePort);
  }
  const backend = backendOn(router, service, microservice);
  if (backend) entries.connector = buildTcpConnector(service.name, service.targetPort, backend);
  return entries;
}

/**
 * The part of `entriesFor` stored under the router itself: the hub listener and the connector. A
 * listener an agent holds because its tags select the service is the same object on every agent, so it
 * is stored once per distribution token (`selectedListener`) and composed into each selecting agent's
 * config when the config is read: a service selected by 10,000 agents is one item, not 10,000.
 */
export function storedEntriesFor(
  router: RouterView,
  service: PlacedService,
  microservice?: PlacedMicroservice,
): RouterEntries {
  const entries = entriesFor(router, service, microservice);
  if (entries.listener && !isHubFor(router, service)) delete entries.listener;
  return entries;
}

/** The listener every agent selecting the service holds (once a bridge port is assigned). */
export function selectedListener(service: PlacedService): TcpListener | undefined {
  if (service.deleted || service.bridgePort === null) return undefined;
  return buildTcpListener(service.name, service.bridgePort);
}

/**
 * The distribution sets a service's selected listener is stored in: one per token its tags carry, and
 * the set of every service (read by agents tagged `all`). No tag token holds ':', so the name of the
 * every-service set cannot collide with one.
 */
export const EVERY_SERVICE_SET = ':all';

export function listenerSetsOfService(serviceTags: readonly string[]): string[] {
  return [EVERY_SERVICE_SET, ...serviceDistributionTokens(serviceTags)];
}

/** The distribution sets whose listeners an agent's router holds (none for router mode none). */
export function listenerSetsOfAgent(
  agent: { routerMode: RouterMode; tags: readonly string[] },
  tagPrefix: string,
): string[] {
  if (agent.routerMode === 'none') return [];
  const tokens = agentDistributionTokens(agent.tags, tagPrefix);
  return tokens.includes(DISTRIBUTION_ALL) ? [EVERY_SERVICE_SET] : tokens;
}
