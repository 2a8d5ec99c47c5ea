import { z } from 'zod';
import { getAgent, listAgents } from '../../shared/commands/agent-views.js';
import {
  createAgent,
  deleteAgent,
  requestAgentReconcile,
  updateAgent,
} from '../../shared/commands/agents.js';
import { issueProvisioningKey } from '../../shared/commands/provisioning.js';
import { getAgentRouterConfig } from '../../shared/commands/router.js';
import { createAgentBody, patchAgentBody, rejectAgentUuidChange } from '../../shared/domain/agent-schema.js';
import { httpApi, jsonRequest, reply, routesOf } from '../../shared/http/api.js';
import {
  agentReconcileAccepted,
  agentView,
  createdAgent,
  provisioningKeyView,
  routerConfigView,
} from '../../shared/http/api-schemas.js';
import { examples } from '../../shared/http/examples.js';

const route = routesOf('agents');

export const routes = [
  route({
    method: 'GET',
    path: '/api/v3/iofog-list',
    auth: 'viewer',
    summary: 'List agents',
    responses: { 200: z.object({ fogs: z.array(agentView) }).strict() },
    handler: async () => reply.ok({ fogs: await listAgents() }),
  }),
  route({
    method: 'POST',
    path: '/api/v3/iofog',
    auth: 'admin',
    summary: 'Create an agent',
    request: jsonRequest(createAgentBody, { example: examples.agent }),
    responses: { 201: createdAgent },
    handler: async ({ body }) => reply.created(await createAgent(body)),
  }),
  route({
    method: 'GET',
    path: '/api/v3/iofog/{uuid}',
    auth: 'viewer',
    summary: 'Read an agent',
    responses: { 200: agentView },
    handler: async ({ param }) => reply.ok(await getAgent(param('uuid'))),
  }),
  route({
    method: 'PATCH',
    path: '/api/v3/iofog/{uuid}',
    auth: 'admin',
    summary: 'Update an agent (partial)',
    request: jsonRequest(patchAgentBody, { before: rejectAgentUuidChange, example: examples.agentPatch }),
    responses: { 204: null },
    handler: async ({ body, param }) => {
      await updateAgent(param('uuid'), body);
      return reply.noContent();
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/v3/iofog/{uuid}',
    auth: 'admin',
    summary: 'Delete an agent',
    responses: { 204: null },
    handler: async ({ param }) => {
      await deleteAgent(param('uuid'));
      return reply.noContent();
    },
  }),
  route({
    method: 'GET',
    path: '/api/v3/iofog/{uuid}/provisioning-key',
    // A GET that hands out a credential: admin only.
    auth: 'admin',
    summary: 'Issue a provisioning key',
    responses: { 200: provisioningKeyView },
    handler: async ({ param }) => reply.ok(await issueProvisioningKey(param('uuid'))),
  }),
  route({
    method: 'GET',
    path: '/api/v3/iofog/{uuid}/router-config',
    auth: 'viewer',
    summary: "An agent's router config (409 while its first one is being built)",
    responses: { 200: routerConfigView },
    handler: async ({ param }) => reply.ok(await getAgentRouterConfig(param('uuid'))),
  }),
  route({
    method: 'POST',
    path: '/api/v3/iofog/{uuid}/reconcile',
    auth: 'admin',
    summary: "Re-drive an agent's router",
    responses: { 202: agentReconcileAccepted },
    handler: async ({ param }) => reply.json(202, await requestAgentReconcile(param('uuid'))),
  }),
];

export const handler = httpApi(routes);
