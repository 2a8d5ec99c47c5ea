import { config } from '../context.js';
import { agentDistributionTokens } from '../domain/distribution.js';
import { DEFAULT_ROUTER, entriesFor, hubRouterKey, serviceSiteKey } from '../domain/placement.js';
import { canonicalJson, type RouterConfig } from '../domain/router-config.js';
import { connectorName, listenerName } from '../domain/router-objects.js';
import { ReconcileError } from '../errors.js';
import { countOperation, timeStep, usage } from '../metrics/usage.js';
import type { FogReconcileMessage } from '../queue/messages.js';
import { type AgentRow, replaceAgentRow } from '../store/agents.js';
import { getMicroservice } from '../store/applications.js';
import { forgetApplied, getApplied } from '../store/applied.js';
import { batchGetItems, keys } from '../store/client.js';
import {
  type DefaultRouterRow,
  deleteRouterConfig,
  markRouterRequestsCompleted,
  type RouterConfigRow,
  type RouterRequestsRow,
} from '../store/routers.js';
import { getServiceRow, type ServiceRow } from '../store/services.js';
import { syncTokenIndex } from '../store/token-index.js';
import { NATS_HUB_KEY, reconcileNats } from './nats.js';
import { reconcileNatsHub } from './nats-hub.js';
import { reconcilePlatform, recordPlatformStatus } from './platform.js';
import { reconcileRouter, routerView } from './router.js';

/**
 * The fog reconcile: converges one router (an agent's, or the standalone default router) and the agent's
 * token index. Requests already covered by a finished computation are skipped.
 */
export function reconcileFog(message: FogReconcileMessage): Promise<void> {
  return countOperation('fog reconcile', () => reconcileFogCounted(message));
}

async function reconcileFogCounted(message: FogReconcileMessage): Promise<void> {
  const { routerKey } = message;
  const inputs = await readFogInputs(routerKey, message.service);
  const { requests, agent, defaultRouter } = inputs;
  if (requests.completed !== undefined && message.seq <= requests.completed) {
    // A later computation covered this request, but it may have read an index that lagged the service
    // the request is about: that one service is checked, and only a router that misses it computes again.
    if (!message.service || (await reflectsService(routerKey, message.service, inputs))) return;
  }
  const coveredUpTo = Math.max(requests.requested ?? 0, message.seq);
  usage.routerReconciles += 1;

  if (routerKey === NATS_HUB_KEY) {
    await timeStep('fog: nats hub', () => reconcileNatsHub());
    await markRouterRequestsCompleted(routerKey, coveredUpTo);
    return;
  }
  // A service fan-out changes bridges only: the agent's own part (its token index, certificates, NATS,
  // the site part of its router config) is recomputed when a request not about one service is among
  // those this computation covers.
  const fabric =
    routerKey !== DEFAULT_ROUTER &&
    (!message.service || (requests.fabricRequested ?? 0) > (requests.fabricCompleted ?? 0));
  let routerWaits: string | null = null;
  if (agent && fabric) {
    await syncAgentTokenIndex(agent);
    // Certificates before the router config: the config names only the ones that exist.
    routerWaits = await timeStep('fog: platform', () => reconcilePlatform(agent, defaultRouter));
  }
  if (!agent && routerKey !== DEFAULT_ROUTER) await deleteRouterConfig(routerKey);

  const result = await timeStep('fog: router reconcile', () =>
    reconcileRouter(routerKey, defaultRouter, {
      ...(agent ? { agent } : {}),
      current: inputs.routerConfig ?? null,
      site: fabric,
    }),
  );
  if (result.managed && message.service) {
    await verifyServiceEntries(
      routerKey,
      result.config,
      message.service,
      agent,
      defaultRouter,
      inputs.service,
    );
  }
  if (fabric) await reconcileAgentNats(routerKey, agent, routerWaits);
  await markRouterRequestsCompleted(routerKey, coveredUpTo, fabric);
  if (agent && agent.observedGeneration < agent.generation) {
    await replaceAgentRow({ ...agent, observedGeneration: agent.generation }, agent);
  }
}

interface FogInputs {
  requests: RouterRequestsRow;
  agent?: AgentRow;
  defaultRouter?: DefaultRouterRow;
  routerConfig?: RouterConfigRow;
  /** The row of the service the request is about, read after the request was sent. */
  service?: ServiceRow;
}

/**
 * Everything a fog reconcile starts from, in one consistent batch read: the router's request counter,
 * the agent, the default router, the stored router config, and the service the request names.
 */
async function readFogInputs(routerKey: string, service: string | undefined): Promise<FogInputs> {
  const isAgent = routerKey !== DEFAULT_ROUTER && routerKey !== NATS_HUB_KEY;
  const wanted = {
    requests: keys.routerRequests(routerKey),
    defaultRouter: keys.defaultRouter(),
    routerConfig: keys.routerConfig(routerKey),
    ...(isAgent ? { agent: keys.agent(routerKey) } : {}),
    ...(service ? { service: keys.service(service) } : {}),
  };
  const names = Object.keys(wanted) as (keyof typeof wanted)[];
  const found = await batchGetItems<Record<string, unknown>>(names.map((name) => wanted[name]!));
  const item = <T>(name: keyof typeof wanted) => found.get(names.indexOf(name)) as T | undefined;
  const requests = item<RouterRequestsRow>('requests') ?? {};
  return {
    requests: {
      requested: requests.requested,
      completed: requests.completed,
      fabricRequested: requests.fabricRequested,
      fabricCompleted: requests.fabricCompleted,
    },
    agent: item<AgentRow>('agent'),
    defaultRouter: item<DefaultRouterRow>('defaultRouter'),
    routerConfig: item<RouterConfigRow>('routerConfig'),
    service: item<ServiceRow>('service'),
  };
}

/**
 * The NATS step runs after the router is written, so a NATS problem never holds the router back; a
 * failure is recorded in the agent's status and then fails the message, which is retried.
 */
async function reconcileAgentNats(
  agentUuid: string,
  agent: AgentRow | undefined,
  routerWaits: string | null,
): Promise<void> {
  let natsWaits: string | null;
  try {
    natsWaits = await timeStep('fog: nats', () => reconcileNats(agentUuid, agent));
  } catch (error) {
    if (agent)
      await recordPlatformStatus(agent.uuid, joinWaits(routerWaits, `NATS: ${(error as Error).message}`));
    throw error;
  }
  if (agent) await recordPlatformStatus(agent.uuid, joinWaits(routerWaits, natsWaits));
}

const joinWaits = (...waits: (string | null)[]) => waits.filter(Boolean).join('; ') || null;

/** The agent's entries in the token index, so service fan-outs find it by what its tags select. */
async function syncAgentTokenIndex(agent: AgentRow): Promise<void> {
  const tokens =
    agent.routerMode === 'none' ? [] : agentDistributionTokens(agent.tags, config().serviceAnnotationTag);
  const owner = { agent: agent.uuid };
  const stale = await syncTokenIndex(owner, tokens, await getApplied(owner));
  await forgetApplied(owner, { tokens: stale });
}

/**
 * Indexes can lag the table: after writing, re-check the named service's entries against its row (read
 * consistently). A missing or extra entry fails the message so it is retried rather than counted as done.
 */
async function verifyServiceEntries(
  routerKey: string,
  routerConfig: RouterConfig | undefined,
  serviceName: string,
  agent: AgentRow | undefined,
  defaultRouter: DefaultRouterRow | undefined,
  service: ServiceRow | undefined,
): Promise<void> {
  if (!(await holdsServiceAsPlaced(routerKey, routerConfig, serviceName, agent, defaultRouter, service))) {
    throw new ReconcileError(
      `Router ${routerKey} does not reflect service ${serviceName} yet (index lag); retrying`,
    );
  }
}

/** Whether the router's stored config holds the named service's entries as placement wants them. */
async function reflectsService(routerKey: string, serviceName: string, inputs: FogInputs): Promise<boolean> {
  // The Kubernetes hub document is the operator's ConfigMap, re-checked by every service reconcile.
  if (routerKey === DEFAULT_ROUTER && config().controlPlane === 'kubernetes') return true;
  return holdsServiceAsPlaced(
    routerKey,
    inputs.routerConfig?.config,
    serviceName,
    inputs.agent,
    inputs.defaultRouter,
    inputs.service,
  );
}

async function holdsServiceAsPlaced(
  routerKey: string,
  routerConfig: RouterConfig | undefined,
  serviceName: string,
  agent: AgentRow | undefined,
  defaultRouter: DefaultRouterRow | undefined,
  knownService: ServiceRow | undefined,
): Promise<boolean> {
  const [service, router] = await Promise.all([
    knownService ?? getServiceRow(serviceName),
    routerView(routerKey, defaultRouter, agent),
  ]);
  if (!router) return true;
  const here = service && serviceSiteKey(service, hubRouterKey(defaultRouter)) === routerKey;
  const microservice =
    here && service.type === 'microservice' ? await getMicroservice(service.resource) : undefined;
  const expected = service ? entriesFor(router, service, microservice) : {};
  const bridges = routerConfig?.bridges ?? {};
  return (
    canonicalJson(bridges.tcpListeners?.[listenerName(serviceName)]) === canonicalJson(expected.listener) &&
    canonicalJson(bridges.tcpConnectors?.[connectorName(serviceName)]) === canonicalJson(expected.connector)
  );
}
