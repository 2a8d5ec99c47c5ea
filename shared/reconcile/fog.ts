import { config } from '../context.js';
import { agentDistributionTokens, agentSelectsService } from '../domain/distribution.js';
import { connectorName, listenerName } from '../domain/router-objects.js';
import { DEFAULT_BRIDGE } from '../domain/service.js';
import { ReconcileError } from '../errors.js';
import { timeStep, usage } from '../metrics/usage.js';
import type { RouterReconcileMessage } from '../queue/messages.js';
import { type AgentRow, getAgentRow, replaceAgentRow, setAgentTokens } from '../store/agents.js';
import { getMicroservice } from '../store/applications.js';
import {
  deleteRouterConfig,
  getDefaultRouter,
  getRouterRequests,
  hubRouterKey,
  markRouterRequestsCompleted,
  STANDALONE_DEFAULT_ROUTER,
} from '../store/routers.js';
import { getServiceRow } from '../store/services.js';
import { reconcileRouter } from './router.js';

/**
 * The fog reconcile: converges one router (an agent's, or the standalone default router) and the
 * agent's token index. Requests already covered by a finished computation are skipped.
 */
export async function reconcileRouterRequest(message: RouterReconcileMessage): Promise<void> {
  const { routerKey } = message;
  const requests = await getRouterRequests(routerKey);
  if (requests.completed !== undefined && message.seq <= requests.completed) return;
  const coveredUpTo = Math.max(requests.requested ?? 0, message.seq);
  usage.routerReconciles += 1;

  const agent = routerKey === STANDALONE_DEFAULT_ROUTER ? undefined : await getAgentRow(routerKey);
  if (agent) await syncAgentTokenIndex(agent);
  if (!agent && routerKey !== STANDALONE_DEFAULT_ROUTER) await deleteRouterConfig(routerKey);

  const defaultRouter = await getDefaultRouter();
  const result = await timeStep('fog: router reconcile', () => reconcileRouter(routerKey, defaultRouter));
  if (result.managed && message.service)
    await verifyServiceEntries(routerKey, result.config, message.service, agent, hubRouterKey(defaultRouter));
  await markRouterRequestsCompleted(routerKey, coveredUpTo);
  if (agent && agent.observedGeneration < agent.generation) {
    await replaceAgentRow({ ...agent, observedGeneration: agent.generation }, agent);
  }
}

async function syncAgentTokenIndex(agent: AgentRow): Promise<void> {
  const tokens =
    agent.routerMode === 'none' ? [] : agentDistributionTokens(agent.tags, config().serviceAnnotationTag);
  const add = tokens.filter((token) => !agent.appliedTokens.includes(token));
  const remove = agent.appliedTokens.filter((token) => !tokens.includes(token));
  if (add.length === 0 && remove.length === 0) return;
  await setAgentTokens(agent.uuid, add, remove);
  const next = { ...agent, appliedTokens: tokens };
  if (await replaceAgentRow(next, agent)) Object.assign(agent, next);
}

/**
 * Indexes can lag the table: after writing, re-check the named service's entries against its row
 * (read consistently). A mismatch fails the message so it is retried rather than counted as done.
 */
async function verifyServiceEntries(
  routerKey: string,
  routerConfig: { bridges?: { tcpListeners?: object; tcpConnectors?: object } } | undefined,
  serviceName: string,
  agent: AgentRow | undefined,
  hubKey: string | undefined,
): Promise<void> {
  const service = await getServiceRow(serviceName);
  const live = !!service && !service.deleted && service.bridgePort != null;
  const bridges = routerConfig?.bridges ?? {};
  const hasListener = listenerName(serviceName) in (bridges.tcpListeners ?? {});
  const hasConnector = connectorName(serviceName) in (bridges.tcpConnectors ?? {});
  const isHubFor =
    live &&
    (service.defaultBridge === routerKey ||
      (service.defaultBridge === DEFAULT_BRIDGE && hubKey === routerKey));
  const selected =
    live &&
    !!agent &&
    agentSelectsService(agentDistributionTokens(agent.tags, config().serviceAnnotationTag), service.tags);
  let connectorHere =
    live && (service.siteKey === routerKey || (service.siteKey === DEFAULT_BRIDGE && hubKey === routerKey));
  if (connectorHere && service?.type === 'microservice') {
    connectorHere = (await getMicroservice(service.resource))?.agentUuid === routerKey;
  }
  if (hasListener !== (isHubFor || selected) || hasConnector !== connectorHere) {
    throw new ReconcileError(
      `Router ${routerKey} does not reflect service ${serviceName} yet (index lag); retrying`,
    );
  }
}
