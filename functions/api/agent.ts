import {
  acknowledgeAgentChanges,
  getAgentChanges,
  getAgentMicroservice,
  listAgentMicroservices,
} from '../../shared/commands/agent-facing.js';
import { provisionAgent } from '../../shared/commands/provisioning.js';
import {
  type ApiEvent,
  type ApiRoute,
  authenticatedAgent,
  httpApi,
  json,
  jsonBody,
  pathParameter,
} from '../../shared/http/api.js';

/** The routes an Edgelet calls, with the reference controller's protocol. */
export const routes: ApiRoute[] = [
  {
    method: 'POST',
    path: '/api/v3/agent/provision',
    auth: 'public',
    handler: async (event: ApiEvent) => json(200, await provisionAgent(jsonBody(event))),
  },
  {
    method: 'GET',
    path: '/api/v3/agent/config/changes',
    auth: 'agent',
    handler: async (event: ApiEvent) => json(200, await getAgentChanges(authenticatedAgent(event))),
  },
  {
    method: 'PATCH',
    path: '/api/v3/agent/config/changes',
    auth: 'agent',
    handler: async (event: ApiEvent) => {
      await acknowledgeAgentChanges(authenticatedAgent(event), jsonBody(event));
      return json(200, {});
    },
  },
  {
    method: 'GET',
    path: '/api/v3/agent/microservices',
    auth: 'agent',
    handler: async (event: ApiEvent) =>
      json(200, { microservices: await listAgentMicroservices(authenticatedAgent(event)) }),
  },
  {
    method: 'GET',
    path: '/api/v3/agent/microservices/{uuid}',
    auth: 'agent',
    handler: async (event: ApiEvent) =>
      json(200, {
        microservice: await getAgentMicroservice(authenticatedAgent(event), pathParameter(event, 'uuid')),
      }),
  },
];

export const handler = httpApi(routes);
