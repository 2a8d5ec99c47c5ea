import type { AcknowledgementBody } from '../domain/agent-protocol-schema.js';
import { hubRouterKey } from '../domain/placement.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { type AgentRow, getAgentRow } from '../store/agents.js';
import { listMicroservicesByAgent } from '../store/applications.js';
import { acknowledgeChanges, type ChangeFlag, readChangeFlags } from '../store/changes.js';
import { getDefaultRouter, readRouterConfig } from '../store/routers.js';

/** What GET /api/v3/agent/config/changes answers: every reference flag plus `lastUpdated`. */
export async function getAgentChanges(
  agentUuid: string,
): Promise<Record<ChangeFlag, boolean> & { lastUpdated: number }> {
  const { flags, lastUpdated } = await readChangeFlags(agentUuid);
  return { ...flags, lastUpdated };
}

export async function acknowledgeAgentChanges(
  agentUuid: string,
  { lastUpdated }: AcknowledgementBody,
): Promise<void> {
  if (!(await acknowledgeChanges(agentUuid, lastUpdated))) {
    throw new ValidationError(
      `Field 'lastUpdated' is ahead of the changes this agent was shown, got ${lastUpdated}`,
    );
  }
}

/** A microservice as an Edgelet receives it; `config` is a JSON string. */
export interface AgentMicroservice {
  uuid: string;
  name: string;
  application: string;
  config: string;
  rebuild: boolean;
  hostNetworkMode: boolean;
  portMappings: unknown[];
  volumeMappings: unknown[];
  env: unknown[];
  isRouter: boolean;
  isNats: boolean;
}

/** The router system microservice's uuid on an agent. */
export const routerMicroserviceUuid = (agentUuid: string) => `${agentUuid}-router`;

export async function listAgentMicroservices(agentUuid: string): Promise<AgentMicroservice[]> {
  const agent = await getAgentRow(agentUuid);
  if (!agent) throw new NotFoundError(`Agent with uuid ${agentUuid} not found`);
  const registered = (await listMicroservicesByAgent(agentUuid)).map(
    (microservice): AgentMicroservice => ({
      uuid: microservice.uuid,
      name: microservice.name,
      application: microservice.application,
      config: '{}',
      rebuild: false,
      hostNetworkMode: microservice.hostNetworkMode,
      portMappings: [],
      volumeMappings: [],
      env: [],
      isRouter: false,
      isNats: false,
    }),
  );
  const router = await routerMicroservice(agent);
  return router ? [router, ...registered] : registered;
}

export async function getAgentMicroservice(agentUuid: string, uuid: string): Promise<AgentMicroservice> {
  const found = (await listAgentMicroservices(agentUuid)).find((microservice) => microservice.uuid === uuid);
  // Another agent's microservice is as invisible as a missing one.
  if (!found) throw new NotFoundError(`Microservice with uuid ${uuid} not found`);
  return found;
}

/** The router system microservice: its config is the router config fogbridge manages, as a JSON string. */
async function routerMicroservice(agent: AgentRow): Promise<AgentMicroservice | undefined> {
  if (agent.routerMode === 'none') return undefined;
  const routerConfig = await readRouterConfig(
    agent.uuid,
    hubRouterKey(await getDefaultRouter()) === agent.uuid,
  );
  return {
    uuid: routerMicroserviceUuid(agent.uuid),
    name: 'router',
    application: `system-${agent.name}`,
    config: JSON.stringify(routerConfig),
    rebuild: false,
    // The system agent's router binds the inter-router and edge ports on the host (seed 001).
    hostNetworkMode: agent.isSystem,
    portMappings: [],
    volumeMappings: [],
    env: [],
    isRouter: true,
    isNats: false,
  };
}
