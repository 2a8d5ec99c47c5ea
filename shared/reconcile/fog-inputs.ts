import { config } from '../context.js';
import { agentDistributionTokens } from '../domain/distribution.js';
import { natsArtefacts } from '../domain/nats-conf.js';
import { DEFAULT_ROUTER } from '../domain/placement.js';
import {
  agentCertificateToken,
  FLEET_CAS,
  routerLocalServerCertificate,
  routerSiteServerCertificate,
} from '../domain/router-site.js';
import { type FogRequest, isAgentRouterKey } from '../queue/messages.js';
import type { AgentRow } from '../store/agents.js';
import { batchGetItems, keys } from '../store/client.js';
import { SYSTEM_ACCOUNT } from '../store/nats-identities.js';
import { type PlatformStatusRow, platformStatusOf } from '../store/platform.js';
import type { RouterRequestsRow } from '../store/router-requests.js';
import {
  type DefaultRouterRow,
  entriesFromItems,
  type RouterConfigRow,
  serviceEntryKeys,
} from '../store/routers.js';
import type { ServiceRow } from '../store/services.js';
import type { StoredServiceEntries } from './router-service-entries.js';

/**
 * What a fog reconcile reads before it decides anything, in one consistent batch read: the router's
 * request counters (and the agent's change flags and platform status beside them), the agent and the
 * default router, and for one service's entries that service's row and entries under the router. The
 * worker reads what all the records of a queue batch need up front (`fogBatchReadKeys`).
 */

export interface FogInputs {
  requests: RouterRequestsRow;
  /** The agent's platform status, kept on the request record. */
  platform?: PlatformStatusRow;
  agent?: AgentRow;
  defaultRouter?: DefaultRouterRow;
  /** The router's base item and the named service's entries under it. */
  stored?: StoredServiceEntries;
  /** The row of the service the request is about, read after the request was sent. */
  service?: ServiceRow;
}

/** The items a fog reconcile of `routerKey` reads first (for one service: that service's entries too). */
function fogInputKeys(routerKey: string, service: string | undefined) {
  const isAgent = isAgentRouterKey(routerKey, DEFAULT_ROUTER);
  const entryKeys = service ? serviceEntryKeys(routerKey, service) : undefined;
  return {
    requests: keys.routerRequests(routerKey),
    defaultRouter: keys.defaultRouter(),
    ...(isAgent ? { agent: keys.agent(routerKey) } : {}),
    ...(service && entryKeys
      ? {
          service: keys.service(service),
          routerConfig: keys.routerConfig(routerKey),
          listener: entryKeys.listener,
          connector: entryKeys.connector,
        }
      : {}),
  };
}

/**
 * What the fog reconciles of a batch of messages read first, all of them: a fan-out's ten records share
 * one batch read (the service and default router once) instead of one each; an agent change whose
 * message names the agent gets its agent's part read with it (certificates, NATS identities and
 * mounts), so it does not wait for the agent row to learn those keys. A lone message without a name
 * would read nothing more than it reads itself: nothing is read up front for it.
 */
export function fogBatchReadKeys(requests: readonly FogRequest[]): { PK: string; SK: string }[] {
  const named = (request: FogRequest) => (request.kind === 'router' ? request.agentName : undefined);
  if (requests.length === 1 && !named(requests[0]!)) return [];
  return requests.flatMap((request) => [
    ...Object.values(
      fogInputKeys(request.routerKey, request.kind === 'service-entries' ? request.service : undefined),
    ),
    ...(request.kind === 'router' && request.agentName
      ? fabricReadKeys({ uuid: request.routerKey, name: request.agentName, tags: request.agentTags ?? [] })
      : []),
  ]);
}

/**
 * Everything a fog reconcile starts from, in one consistent batch read (answered from the queue
 * batch's read when the worker made one): the router's request counter, the agent, the default router,
 * and for a service fan-out the router's base item, the service's two entries under it and the service
 * row.
 */
export async function readFogInputs(routerKey: string, service: string | undefined): Promise<FogInputs> {
  const wanted = fogInputKeys(routerKey, service);
  const names = Object.keys(wanted) as (keyof typeof wanted)[];
  const found = await batchGetItems<Record<string, unknown>>(names.map((name) => wanted[name]!));
  const item = <T>(name: keyof typeof wanted) => found.get(names.indexOf(name)) as T | undefined;
  const requests = item<RouterRequestsRow>('requests') ?? {};
  const platform = platformStatusOf(item('requests'));
  return {
    ...(platform ? { platform } : {}),
    requests: {
      requested: requests.requested,
      completed: requests.completed,
      fabricRequested: requests.fabricRequested,
      fabricCompleted: requests.fabricCompleted,
      fullRequested: requests.fullRequested,
      fullCompleted: requests.fullCompleted,
      ...(requests.rollout ? { rollout: requests.rollout } : {}),
      ...(requests.linksTold ? { linksTold: requests.linksTold } : {}),
    },
    agent: item<AgentRow>('agent'),
    defaultRouter: item<DefaultRouterRow>('defaultRouter'),
    ...(service
      ? {
          stored: {
            row: item<RouterConfigRow>('routerConfig'),
            entries: entriesFromItems(item('listener'), item('connector')),
          },
        }
      : {}),
    service: item<ServiceRow>('service'),
  };
}

/**
 * Every item the agent's own part reads by key: the fleet CAs and the agent's certificates, its NATS
 * instance, server entry, identities and mounts (under every NATS role, absent ones included), its
 * token index entries, its request record (what it indexed) and router base item.
 */
export function fabricReadKeys(
  agent: Pick<AgentRow, 'uuid' | 'name' | 'tags'>,
): { PK: string; SK: string }[] {
  const token = agentCertificateToken(agent.name);
  const distributionTokens = agentDistributionTokens(agent.tags, config().serviceAnnotationTag);
  const nats = (['hub', 'server', 'leaf'] as const).map((role) => natsArtefacts(token, role));
  const certificates = [
    ...FLEET_CAS,
    routerSiteServerCertificate(token),
    routerLocalServerCertificate(token),
    nats[0]!.serverCertificate,
    nats[0]!.mqttCertificate,
  ];
  const mounts = [
    ...new Set(
      nats.flatMap((artefacts) => [
        artefacts.configMount,
        artefacts.jwtMount,
        artefacts.jetstreamKey,
        artefacts.credsMount,
      ]),
    ),
  ];
  return [
    keys.routerRequests(agent.uuid),
    keys.routerConfig(agent.uuid),
    keys.natsHub(),
    keys.natsOperator(),
    keys.natsAccount(SYSTEM_ACCOUNT),
    keys.natsInstance(agent.uuid),
    keys.natsServer(agent.uuid),
    ...distributionTokens.map((distributionToken) => keys.agentToken(distributionToken, agent.uuid)),
    ...nats.map((artefacts) => keys.natsUser(SYSTEM_ACCOUNT, artefacts.user)),
    ...certificates.map((name) => keys.certificate(name)),
    ...mounts.map((name) => keys.mount(name)),
  ];
}
