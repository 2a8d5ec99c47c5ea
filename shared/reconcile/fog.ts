import { config } from '../context.js';
import { agentDistributionTokens, agentIndexTokens } from '../domain/distribution.js';
import { natsArtefacts } from '../domain/nats-conf.js';
import { DEFAULT_ROUTER } from '../domain/placement.js';
import {
  agentCertificateToken,
  FLEET_CAS,
  routerLocalServerCertificate,
  routerSiteServerCertificate,
} from '../domain/router-site.js';
import { countEvent, observeStep } from '../metrics/operations.js';
import { type FogRequest, isAgentRouterKey } from '../queue/messages.js';
import { type AgentRow, agentTokenWrites, getAgentRow, replaceAgentRow } from '../store/agents.js';
import { forgetApplied, getApplied } from '../store/applied.js';
import { certificateItem, deleteCertificatesOf } from '../store/certificates.js';
import { type ChangeStamp, raiseChangeFlag, raiseChangeFlags } from '../store/changes.js';
import { batchGetItems, batchWriteItems, keys } from '../store/client.js';
import { SYSTEM_ACCOUNT } from '../store/nats-identities.js';
import { forgetPendingSites } from '../store/pending-sites.js';
import { type PlatformStatusRow, platformStatusOf, putPlatformStatus } from '../store/platform.js';
import { withReadSnapshot } from '../store/read-snapshot.js';
import { markRouterRequestsCompleted, type RouterRequestsRow } from '../store/router-requests.js';
import {
  type DefaultRouterRow,
  deleteRouterConfig,
  entriesFromItems,
  type RouterConfigRow,
  serviceEntryKeys,
} from '../store/routers.js';
import type { ServiceRow } from '../store/services.js';
import { outsideReadSnapshot } from '../store/snapshot.js';
import { recordTokenIntent } from '../store/token-index.js';
import { reconcileNats } from './nats.js';
import { reconcileNatsRequest } from './nats-requests.js';
import { platformStatusChange, reconcilePlatform } from './platform.js';
import type { StoredServiceEntries } from './router-plan.js';
import { REBUILD_FLAGS, rebuildTold, reconcileRouter, reconcileRouterForService } from './router-write.js';

/**
 * The fog reconcile, by what it was asked: one service's entries on one router (a fan-out), a whole
 * router and its agent's own part, or one of the NATS fabric's requests (see nats-requests.ts).
 */
export function reconcileFog(request: FogRequest): Promise<void> {
  switch (request.kind) {
    case 'service-entries':
      return reconcileServiceEntries(request);
    case 'router':
      return reconcileWholeRouter(request);
    case 'nats-hub':
    case 'nats-operator':
    case 'nats-application':
      return reconcileNatsRequest(request);
  }
}

/**
 * A fan-out: that service's entries on the router. An agent whose own part is owed (a request for it is
 * not finished yet) gets its whole computation instead, which the fan-out then joins.
 */
async function reconcileServiceEntries(
  request: Extract<FogRequest, { kind: 'service-entries' }>,
): Promise<void> {
  const inputs = await readFogInputs(request.routerKey, request.service);
  const { requests } = inputs;
  const ownPartOwed =
    request.routerKey !== DEFAULT_ROUTER && (requests.fabricRequested ?? 0) > (requests.fabricCompleted ?? 0);
  if (!ownPartOwed) return convergeServiceOnRouter(request, inputs);
  return computeRouter(request.routerKey, inputs, { seq: 0, fabric: true, raise: request.raise });
}

/** An agent change, a CA import, a re-drive: skipped when a later computation covered it. */
async function reconcileWholeRouter(request: Extract<FogRequest, { kind: 'router' }>): Promise<void> {
  const inputs = await readFogInputs(request.routerKey, undefined);
  const { completed } = inputs.requests;
  if (completed !== undefined && request.seq <= completed) return;
  return computeRouter(request.routerKey, inputs, {
    seq: request.seq,
    fabric: request.routerKey !== DEFAULT_ROUTER,
    raise: false,
  });
}

/**
 * A whole router (with the agent's own part when `fabric`), then one write that marks every request up to
 * what it read as covered, records the agent's platform status and tells the agent what it is owed.
 */
async function computeRouter(
  routerKey: string,
  inputs: FogInputs,
  asked: { seq: number; fabric: boolean; raise: boolean },
): Promise<void> {
  const { requests, agent } = inputs;
  const { fabric } = asked;
  const coveredUpTo = Math.max(requests.requested ?? 0, asked.seq);
  countEvent('router reconcile');
  // Entries are recomputed in full unless this is an agent change and nobody asked for a full one: then
  // only when what placement reads of the router moved.
  const full = !fabric || (requests.fullRequested ?? 0) > (requests.fullCompleted ?? 0);
  const converge = () => convergeRouterAndFabric(routerKey, inputs, { fabric, full, raise: asked.raise });
  // The agent's own part reads some twenty items (certificates and their CAs, NATS identities and
  // mounts, statuses): one batch read up front answers them all.
  const outcome = await (agent && fabric ? withReadSnapshot(fabricReadKeys(agent), converge) : converge());
  const status =
    outcome.waits === undefined ? undefined : platformStatusChange(inputs.platform, outcome.waits);
  await markRouterRequestsCompleted(routerKey, coveredUpTo, {
    fabric,
    full,
    ...(status ? { status } : {}),
    raise: outcome.raise,
  });
  if (outcome.restart) await rebuildTold(routerKey, outcome.restart);
  if (agent && agent.observedGeneration < agent.generation) {
    await replaceAgentRow({ ...agent, observedGeneration: agent.generation }, agent);
  }
}

/** What a router's computation leaves for the final write of its fog reconcile. */
interface FabricOutcome {
  /** What the agent's platform waits for (null: nothing; undefined: no agent part ran). */
  waits: string | null | undefined;
  /** The change flags the agent is owed for what was written (its config, new certificates). */
  raise: ChangeStamp[];
  /** The router start the raise tells the agent to rebuild for. */
  restart?: { digest: string };
}

/**
 * The router's computation, and for an agent change the agent's own part around it. The agent is told
 * of it all at once, by the write that marks the request completed: it fetches its config and files
 * once everything is written.
 */
async function convergeRouterAndFabric(
  routerKey: string,
  inputs: FogInputs,
  { fabric, full, raise: asked }: { fabric: boolean; full: boolean; raise: boolean },
): Promise<FabricOutcome> {
  const { agent, defaultRouter, platform } = inputs;
  let routerWaits: string | null = null;
  let owed: ChangeStamp[] = [];
  if (agent && fabric) {
    // Certificates before the router config: the config names only the ones that exist.
    const items = await observeStep('fog: platform', () => convergeAgentItems(agent, defaultRouter));
    routerWaits = items.waitingFor;
    owed = items.flags;
    // Deleted while its certificates were made: its delete may have cleaned up before they were written.
    if (items.created.length > 0 && !(await agentExists(agent.uuid))) {
      await deleteCertificatesOf(
        agent.uuid,
        items.created.map((certificate) => certificate.name),
      );
      return { waits: undefined, raise: [] };
    }
  }
  if (!agent && routerKey !== DEFAULT_ROUTER) {
    await Promise.all([
      deleteRouterConfig(routerKey),
      forgetPendingSites(routerKey),
      deleteCertificatesOf(routerKey),
    ]);
  }

  const result = await observeStep('fog: router reconcile', () =>
    reconcileRouter(routerKey, defaultRouter, {
      ...(agent ? { agent } : {}),
      site: fabric,
      bridges: full ? 'full' : 'if-moved',
      tell: false,
    }),
  );
  const tell = result.written || !!result.restart || (asked && result.managed);
  const restart = agent ? result.restart : undefined;
  const raise: ChangeStamp[] = agent
    ? [...owed, ...(tell ? (['microserviceConfig'] as const) : []), ...(restart ? REBUILD_FLAGS : [])]
    : [];
  const told = { raise, ...(restart ? { restart } : {}) };
  if (!fabric) return { waits: undefined, ...told };
  try {
    return { waits: await reconcileAgentNats(routerKey, agent, routerWaits, platform), ...told };
  } catch (error) {
    // What was written stands: the agent is told of it before the message is retried.
    if (raise.length > 0) await raiseChangeFlags(routerKey, raise);
    if (restart) await rebuildTold(routerKey, restart);
    throw error;
  }
}

/**
 * Every item the agent's own part reads by key: the fleet CAs and the agent's certificates, its NATS
 * instance, server entry, identities and mounts (under every NATS role, absent ones included), its
 * token index entries, its request record (what it indexed) and router base item.
 */
function fabricReadKeys(agent: Pick<AgentRow, 'uuid' | 'name' | 'tags'>): { PK: string; SK: string }[] {
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

/**
 * A service fan-out: that one service's entries under the router, from the rows read in the batch, and
 * the agent told when the service's distribution-set listener changed (its config is composed with it).
 */
async function convergeServiceOnRouter(
  request: Extract<FogRequest, { kind: 'service-entries' }>,
  inputs: FogInputs,
): Promise<void> {
  countEvent('router reconcile');
  const { agent } = inputs;
  const result = await observeStep('fog: service entries', () =>
    reconcileRouterForService(request.routerKey, inputs.service, request.service, inputs.defaultRouter, {
      ...(agent ? { agent } : {}),
      ...(inputs.stored ? { stored: inputs.stored } : {}),
    }),
  );
  // The service's listener in a set this agent selects changed (its service reconcile marked the agent
  // as not having applied it yet).
  if (request.raise && agent && result.managed && !result.written) {
    await raiseChangeFlag(agent.uuid, 'microserviceConfig');
  }
}

interface FogInputs {
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
async function readFogInputs(routerKey: string, service: string | undefined): Promise<FogInputs> {
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
 * The NATS step runs after the router is written, so a NATS problem never holds the router back; a
 * failure is recorded in the agent's status and then fails the message, which is retried. Returns what
 * the agent's platform waits for (undefined: the agent is gone).
 */
async function reconcileAgentNats(
  agentUuid: string,
  agent: AgentRow | undefined,
  routerWaits: string | null,
  /** The status as this reconcile read it (only the router's own reconciles write it). */
  platform: PlatformStatusRow | undefined,
): Promise<string | null | undefined> {
  let natsWaits: string | null;
  try {
    natsWaits = await observeStep('fog: nats', () => reconcileNats(agentUuid, agent));
  } catch (error) {
    if (agent) {
      const waits = joinWaits(routerWaits, `NATS: ${(error as Error).message}`);
      const status = platformStatusChange(platform, waits);
      if (status) await putPlatformStatus(agent.uuid, status);
    }
    throw error;
  }
  return agent ? joinWaits(routerWaits, natsWaits) : undefined;
}

const joinWaits = (...waits: (string | null)[]) => waits.filter(Boolean).join('; ') || null;

/**
 * The agent's entries in the token index (so service fan-outs find it by what its tags select) and its
 * router certificates (see `reconcilePlatform`). The entries it lacks and the certificates it gets for
 * the first time are written together in one batch write; the request that asked for this reconcile
 * usually recorded the entries' tokens already (see `Applied`), else they are recorded first here.
 */
async function convergeAgentItems(agent: AgentRow, defaultRouter: DefaultRouterRow | undefined) {
  const tokens = agentIndexTokens(agent, config().serviceAnnotationTag);
  const owner = { agent: agent.uuid };
  const stale = await recordTokenIntent(owner, tokens, await getApplied(owner));
  const index = await agentTokenWrites(agent.uuid, tokens, stale);
  const platform = await reconcilePlatform(agent, defaultRouter);
  await batchWriteItems([...index.puts, ...platform.created.map(certificateItem)], index.deletes);
  await forgetApplied(owner, { tokens: stale });
  return platform;
}

/** Whether the agent's row is still there, read from the store (not from the reconcile's read snapshot). */
async function agentExists(uuid: string): Promise<boolean> {
  return (await outsideReadSnapshot(() => getAgentRow(uuid))) !== undefined;
}
