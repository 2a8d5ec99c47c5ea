import { config } from '../context.js';
import { DEFAULT_ROUTER_PORTS } from '../domain/agent-schema.js';
import { DEFAULT_ROUTER, hubRouterKey } from '../domain/placement.js';
import { portSetProblem } from '../domain/port-set.js';
import type { RouterConfig } from '../domain/router-config.js';
import { incompleteRouterConfig } from '../domain/router-microservice.js';
import type { PutRouterBody } from '../domain/router-schema.js';
import type { SkrouterdEntry } from '../domain/skrouterd.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { readHubConfigMap } from '../k8s/hub-configmap.js';
import { askRouterReconciles } from '../queue/publishers.js';
import { type AgentRow, getAgentRow, listAgentRows } from '../store/agents.js';
import {
  type DefaultRouterRow,
  getDefaultRouter,
  putDefaultRouter,
  readRouterConfig,
} from '../store/routers.js';
import { listServiceRows } from '../store/services.js';
import { requeueServices } from './services.js';

export interface DefaultRouterView {
  host: string;
  messagingPort: number;
  interRouterPort: number;
  edgeRouterPort: number;
}

const toView = (row: DefaultRouterRow): DefaultRouterView => ({
  host: row.host,
  messagingPort: row.messagingPort,
  interRouterPort: row.interRouterPort,
  edgeRouterPort: row.edgeRouterPort,
});

export async function getDefaultRouterView(): Promise<DefaultRouterView> {
  const row = await getDefaultRouter();
  if (!row) throw new NotFoundError('Default router not found: register it with PUT /api/v3/router');
  return toView(row);
}

/**
 * Registers or updates the default router (no router microservice is created for it). When the host
 * changes, every service's serviceEndpoint changes with it, so services are reconciled.
 */
export async function putDefaultRouterFromBody(body: PutRouterBody): Promise<DefaultRouterView> {
  const existing = await getDefaultRouter();
  const ports = {
    messagingPort: body.messagingPort ?? DEFAULT_ROUTER_PORTS.messagingPort,
    interRouterPort: body.interRouterPort ?? DEFAULT_ROUTER_PORTS.interRouterPort,
    edgeRouterPort: body.edgeRouterPort ?? DEFAULT_ROUTER_PORTS.edgeRouterPort,
  };
  const problem = portSetProblem(
    Object.entries(ports).map(([field, port]) => ({ field, port })),
    { routerManagement: true },
  );
  if (problem) throw new ValidationError(problem);
  const row: DefaultRouterRow = {
    host: body.host,
    messagingPort: body.messagingPort ?? DEFAULT_ROUTER_PORTS.messagingPort,
    interRouterPort: body.interRouterPort ?? DEFAULT_ROUTER_PORTS.interRouterPort,
    edgeRouterPort: body.edgeRouterPort ?? DEFAULT_ROUTER_PORTS.edgeRouterPort,
    agentUuid: existing?.agentUuid ?? null,
    updatedAt: new Date().toISOString(),
  };
  await putDefaultRouter(row);
  const moved =
    existing?.host !== row.host ||
    existing.interRouterPort !== row.interRouterPort ||
    existing.edgeRouterPort !== row.edgeRouterPort;
  // Every router that dials the default router embeds its host and ports in its connector.
  const dependents = moved
    ? (await listAgentRows()).filter(dialsDefaultRouter).map((agent) => agent.uuid)
    : [];
  await askRouterReconciles([...(!existing || moved ? [hubRouterKey(row)!] : []), ...dependents]);
  if (existing?.host !== row.host) await requeueServices(await listServiceRows(), `router-${Date.now()}`);
  return toView(row);
}

/**
 * On a remote control plane the default router is the system agent's router: when that agent's host
 * or ports change, the record follows, and services re-derive their endpoint from it.
 */
export async function followSystemAgentRouter(current: DefaultRouterRow, agent: AgentRow): Promise<void> {
  const row: DefaultRouterRow = {
    ...current,
    host: agent.host ?? current.host,
    messagingPort: agent.messagingPort ?? current.messagingPort,
    interRouterPort: agent.interRouterPort ?? current.interRouterPort,
    edgeRouterPort: agent.edgeRouterPort ?? current.edgeRouterPort,
    updatedAt: new Date().toISOString(),
  };
  await putDefaultRouter(row);
  if (row.host !== current.host) await requeueServices(await listServiceRows(), `router-${Date.now()}`);
}

const dialsDefaultRouter = (agent: AgentRow) =>
  agent.routerMode !== 'none' && agent.upstreamRouters.includes(DEFAULT_ROUTER);

/** The hub document as last written (what the default router runs with). */
export async function getHubRouterConfig(): Promise<RouterConfig | SkrouterdEntry[]> {
  const key = hubRouterKey(await getDefaultRouter());
  if (!key) throw new NotFoundError('Default router not found: register it with PUT /api/v3/router');
  // On Kubernetes the default router's document is the operator's skrouterd.json (array of pairs).
  if (key === DEFAULT_ROUTER && config().controlPlane === 'kubernetes') return readHubConfigMap();
  // An agent's router that is the hub also holds the listeners its own tags select.
  const agent = key === DEFAULT_ROUTER ? undefined : await getAgentRow(key);
  return readRouterConfig(key, true, agent);
}

/** An agent's router microservice config, exactly as the agent receives it. */
export async function getAgentRouterConfig(uuid: string): Promise<RouterConfig> {
  const agent = await getAgentRow(uuid);
  if (!agent) throw new NotFoundError(`Agent with uuid ${uuid} not found`);
  if (agent.routerMode === 'none') {
    throw new NotFoundError(`Agent ${agent.name} has router mode none: it has no router config`);
  }
  const routerConfig = await readRouterConfig(uuid, hubRouterKey(await getDefaultRouter()) === uuid, agent);
  // Never half a config: until its first reconcile wrote its identity and management listener, a read
  // says so rather than answering something no Router could start from.
  const building = incompleteRouterConfig(
    routerConfig,
    { uuid: agent.uuid, routerMode: agent.routerMode === 'interior' ? 'interior' : 'edge' },
    // What the agent holds on its node is not this view's concern: every profile the config defines counts.
    new Set(Object.keys(routerConfig.sslProfiles ?? {})),
    [],
  );
  if (building) {
    throw new ConflictError(
      `The router config of agent ${agent.name} is being built (${building}); read it again shortly`,
    );
  }
  return routerConfig;
}
