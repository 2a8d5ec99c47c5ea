import { config } from '../context.js';
import { agentDistributionTokens } from '../domain/distribution.js';
import { DEFAULT_ROUTER, entriesFor, hubRouterKey, serviceSiteKey } from '../domain/placement.js';
import type { RouterConfig } from '../domain/router-config.js';
import { connectorName, listenerName } from '../domain/router-objects.js';
import { ReconcileError } from '../errors.js';
import { timeStep, usage } from '../metrics/usage.js';
import type { FogReconcileMessage } from '../queue/messages.js';
import { type AgentRow, getAgentRow, replaceAgentRow, setAgentTokens } from '../store/agents.js';
import { getMicroservice } from '../store/applications.js';
import {
  type DefaultRouterRow,
  deleteRouterConfig,
  getDefaultRouter,
  getRouterRequests,
  markRouterRequestsCompleted,
} from '../store/routers.js';
import { getServiceRow } from '../store/services.js';
import { reconcileRouter, routerView } from './router.js';

/**
 * The fog reconcile: converges one router (an agent's, or the standalone default router) and the agent's
 * token index. Requests already covered by a finished computation are skipped.
 */
export async function reconcileFog(message: FogReconcileMessage): Promise<void> {
  const { routerKey } = message;
  const requests = await getRouterRequests(routerKey);
  if (requests.completed !== undefined && message.seq <= requests.completed) return;
  const coveredUpTo = Math.max(requests.requested ?? 0, message.seq);
  usage.routerReconciles += 1;

  const agent = routerKey === DEFAULT_ROUTER ? undefined : await getAgentRow(routerKey);
  if (agent) await syncAgentTokenIndex(agent);
  if (!agent && routerKey !== DEFAULT_ROUTER) await deleteRouterConfig(routerKey);

  const defaultRouter = await getDefaultRouter();
  const result = await timeStep('fog: router reconcile', () => reconcileRouter(routerKey, defaultRouter));
  if (result.managed && message.service) {
    await verifyServiceEntries(routerKey, result.config, message.service, agent, defaultRouter);
  }
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
 * Indexes can lag the table: after writing, re-check the named service's entries against its row (read
 * consistently). A missing or extra entry fails the message so it is retried rather than counted as done.
 */
async function verifyServiceEntries(
  routerKey: string,
  routerConfig: RouterConfig | undefined,
  serviceName: string,
  agent: AgentRow | undefined,
  defaultRouter: DefaultRouterRow | undefined,
): Promise<void> {
  const [service, router] = await Promise.all([
    getServiceRow(serviceName),
    routerView(routerKey, defaultRouter, agent),
  ]);
  if (!router) return;
  const here = service && serviceSiteKey(service, hubRouterKey(defaultRouter)) === routerKey;
  const microservice =
    here && service.type === 'microservice' ? await getMicroservice(service.resource) : undefined;
  const expected = service ? entriesFor(router, service, microservice) : {};
  const bridges = routerConfig?.bridges ?? {};
  const hasListener = listenerName(serviceName) in (bridges.tcpListeners ?? {});
  const hasConnector = connectorName(serviceName) in (bridges.tcpConnectors ?? {});
  if (hasListener !== !!expected.listener || hasConnector !== !!expected.connector) {
    throw new ReconcileError(
      `Router ${routerKey} does not reflect service ${serviceName} yet (index lag); retrying`,
    );
  }
}
