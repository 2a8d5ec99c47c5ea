import { z } from 'zod';
import {
  acknowledgeAgentChanges,
  getAgentChanges,
  getAgentMicroservice,
  listAgentMicroservices,
} from '../../shared/commands/agent-protocol.js';
import { provisionAgent } from '../../shared/commands/provisioning.js';
import { acknowledgementBody, provisionBody } from '../../shared/domain/agent-protocol-schema.js';
import { httpApi, jsonRequest, reply, routesOf } from '../../shared/http/api.js';
import { agentMicroserviceView, changesView, provisionedView } from '../../shared/http/api-schemas.js';
import { examples } from '../../shared/http/examples.js';

const route = routesOf('agent-protocol');

/** The routes an Edgelet calls, with the reference controller's protocol. */
export const routes = [
  route({
    method: 'POST',
    path: '/api/v3/agent/provision',
    auth: 'public',
    summary: 'Provision an agent with a key',
    request: jsonRequest(provisionBody, { example: examples.provision }),
    responses: { 200: provisionedView },
    handler: async ({ body }) => reply.ok(await provisionAgent(body)),
  }),
  route({
    method: 'GET',
    path: '/api/v3/agent/config/changes',
    auth: 'agent',
    summary: "The agent's change flags",
    responses: { 200: changesView },
    handler: async ({ agentUuid }) => reply.ok(await getAgentChanges(agentUuid)),
  }),
  route({
    method: 'PATCH',
    path: '/api/v3/agent/config/changes',
    auth: 'agent',
    summary: 'Acknowledge changes',
    request: jsonRequest(acknowledgementBody, { example: examples.acknowledgement }),
    responses: { 200: z.object({}).strict() },
    handler: async ({ agentUuid, body }) => {
      await acknowledgeAgentChanges(agentUuid, body);
      return reply.ok({});
    },
  }),
  route({
    method: 'GET',
    path: '/api/v3/agent/microservices',
    auth: 'agent',
    summary: "The agent's microservices",
    responses: { 200: z.object({ microservices: z.array(agentMicroserviceView) }).strict() },
    handler: async ({ agentUuid }) => reply.ok({ microservices: await listAgentMicroservices(agentUuid) }),
  }),
  route({
    method: 'GET',
    path: '/api/v3/agent/microservices/{uuid}',
    auth: 'agent',
    summary: "One of the agent's microservices",
    responses: { 200: z.object({ microservice: agentMicroserviceView }).strict() },
    handler: async ({ agentUuid, param }) =>
      reply.ok({ microservice: await getAgentMicroservice(agentUuid, param('uuid')) }),
  }),
];

export const handler = httpApi(routes);
