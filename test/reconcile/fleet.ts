import { createAgent, updateAgent } from '../../shared/commands/agents.js';
import { createApplication } from '../../shared/commands/applications.js';
import { createMicroservice } from '../../shared/commands/microservices.js';
import { getAgentRouterConfig } from '../../shared/commands/router.js';
import { createService, deleteService, updateServiceFromJson } from '../../shared/commands/services.js';
import { parseCreateAgentBody, parsePatchAgentBody } from '../../shared/domain/agent-schema.js';
import {
  parseCreateApplicationBody,
  parseCreateMicroserviceBody,
} from '../../shared/domain/registry-schema.js';
import type { RouterConfig } from '../../shared/domain/router-config.js';
import { parseCreateServiceBody, parsePatchServiceBody } from '../../shared/domain/service-schema.js';
import { readChangeFlags } from '../../shared/store/changes.js';
import type { World } from './harness.js';

/**
 * What the reconciler cases are given and what they look at, through the same commands and parsers the
 * API uses (bodies as a client sends them, validated at the edge) and the reads the agents' routes make.
 */

export const givenAgent = (world: World, body: Record<string, unknown>) =>
  world.run(async () => (await createAgent(parseCreateAgentBody(body))).uuid);

export const changeAgent = (world: World, uuid: string, body: Record<string, unknown>) =>
  world.run(() => updateAgent(uuid, parsePatchAgentBody(body)));

export const givenApplication = (world: World, name: string) =>
  world.run(() => createApplication(parseCreateApplicationBody({ name })));

export const givenMicroservice = (world: World, body: Record<string, unknown>) =>
  world.run(async () => (await createMicroservice(parseCreateMicroserviceBody(body))).uuid);

export const givenService = (world: World, body: Record<string, unknown>) =>
  world.run(() => createService(parseCreateServiceBody(body), 'json'));

export const changeService = (world: World, name: string, body: Record<string, unknown>) =>
  world.run(() => updateServiceFromJson(name, parsePatchServiceBody(body)));

export const removeService = (world: World, name: string) => world.run(() => deleteService(name));

/** An agent router's config as the agent receives it. */
export const routerOf = (world: World, uuid: string): Promise<RouterConfig> =>
  world.run(() => getAgentRouterConfig(uuid));

/** The names (and the fields asked for) of the bridges a router holds. */
export async function bridgesOf(world: World, uuid: string) {
  const config = await routerOf(world, uuid);
  return {
    listeners: Object.keys(config.bridges?.tcpListeners ?? {}).sort(),
    connectors: Object.fromEntries(
      Object.entries(config.bridges?.tcpConnectors ?? {}).map(([name, connector]) => [
        name,
        { host: connector.host, port: connector.port, processId: connector.processId },
      ]),
    ),
  };
}

/** The agent's change state: the flags it would see, and whether its router owes a rebuild. */
export const changesOf = (world: World, uuid: string) => world.run(() => readChangeFlags(uuid));
