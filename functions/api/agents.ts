import { createAgent, deleteAgent, getAgent, listAgents, updateAgent } from '../../shared/commands/agents.js';
import { issueProvisioningKey } from '../../shared/commands/provisioning.js';
import { getAgentRouterConfig } from '../../shared/commands/router.js';
import {
  type ApiEvent,
  type ApiRoute,
  httpApi,
  json,
  jsonBody,
  noContent,
  pathParameter,
} from '../../shared/http/api.js';

export const routes: ApiRoute[] = [
  { method: 'GET', path: '/api/v3/iofog-list', handler: async () => json(200, { fogs: await listAgents() }) },
  {
    method: 'POST',
    path: '/api/v3/iofog',
    handler: async (event: ApiEvent) => json(201, await createAgent(jsonBody(event))),
  },
  {
    method: 'GET',
    path: '/api/v3/iofog/{uuid}',
    handler: async (event: ApiEvent) => json(200, await getAgent(pathParameter(event, 'uuid'))),
  },
  {
    method: 'PATCH',
    path: '/api/v3/iofog/{uuid}',
    handler: async (event: ApiEvent) => {
      await updateAgent(pathParameter(event, 'uuid'), jsonBody(event));
      return noContent();
    },
  },
  {
    method: 'DELETE',
    path: '/api/v3/iofog/{uuid}',
    handler: async (event: ApiEvent) => {
      await deleteAgent(pathParameter(event, 'uuid'));
      return noContent();
    },
  },
  {
    method: 'GET',
    path: '/api/v3/iofog/{uuid}/provisioning-key',
    // A GET that hands out a credential: admin only.
    auth: 'admin',
    handler: async (event: ApiEvent) => json(200, await issueProvisioningKey(pathParameter(event, 'uuid'))),
  },
  {
    method: 'GET',
    path: '/api/v3/iofog/{uuid}/router-config',
    handler: async (event: ApiEvent) => json(200, await getAgentRouterConfig(pathParameter(event, 'uuid'))),
  },
];

export const handler = httpApi(routes);
