import { z } from 'zod';
import {
  acknowledgeAgentChanges,
  getAgentChanges,
  getAgentMicroservice,
  listAgentMicroservices,
  listAgentRegistries,
  readAgentConfig,
  registerController,
  reportAgentStatus,
  storeAgentConfig,
} from '../../shared/commands/agent-protocol.js';
import { provisionAgent } from '../../shared/commands/provisioning.js';
import { listAgentVolumeMounts } from '../../shared/commands/volume-mounts.js';
import {
  acknowledgementBody,
  agentDocument,
  controllerRegisterBody,
  provisionBody,
} from '../../shared/domain/agent-protocol-schema.js';
import { httpApi, jsonRequest, reply, routesOf } from '../../shared/http/api.js';
import {
  agentMicroserviceView,
  agentRegistryView,
  changesView,
  provisionedView,
  volumeMountView,
} from '../../shared/http/api-schemas.js';
import { examples } from '../../shared/http/examples.js';

const route = routesOf('agent-protocol');

/**
 * The routes an Edgelet calls, with the reference controller's protocol. Every success is 200 with a
 * JSON object or 204 with nothing: Edgelet's client counts anything else as an error.
 */
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
    method: 'PUT',
    path: '/api/v3/agent/status',
    auth: 'agent',
    summary: "The agent's status report (agent and router health)",
    request: jsonRequest(agentDocument, { example: examples.agentStatus }),
    responses: { 204: null },
    handler: async ({ agentUuid, body }) => {
      await reportAgentStatus(agentUuid, body);
      return reply.noContent();
    },
  }),
  route({
    method: 'GET',
    path: '/api/v3/agent/config',
    auth: 'agent',
    summary: "The agent's settings, as it last sent them",
    responses: { 200: z.record(z.string(), z.unknown()) },
    handler: async ({ agentUuid }) => reply.ok(await readAgentConfig(agentUuid)),
  }),
  route({
    method: 'PATCH',
    path: '/api/v3/agent/config',
    auth: 'agent',
    summary: 'The agent reports its settings',
    request: jsonRequest(agentDocument, { example: examples.agentConfig }),
    responses: { 204: null },
    handler: async ({ agentUuid, body }) => {
      await storeAgentConfig(agentUuid, body);
      return reply.noContent();
    },
  }),
  route({
    method: 'GET',
    path: '/api/v3/agent/registries',
    auth: 'agent',
    summary: 'The container registries the agent pulls from',
    responses: { 200: z.object({ registries: z.array(agentRegistryView) }).strict() },
    handler: async ({ agentUuid }) => reply.ok({ registries: await listAgentRegistries(agentUuid) }),
  }),
  route({
    method: 'GET',
    path: '/api/v3/agent/volumeMounts',
    auth: 'agent',
    summary: "The agent's volume mounts (its certificates' files, base64)",
    responses: { 200: z.object({ volumeMounts: z.array(volumeMountView) }).strict() },
    handler: async ({ agentUuid }) => reply.ok({ volumeMounts: await listAgentVolumeMounts(agentUuid) }),
  }),
  route({
    method: 'POST',
    path: '/api/v3/agent/controller/register',
    auth: 'agent',
    summary: 'A system agent registers the Controller container it runs',
    request: jsonRequest(controllerRegisterBody, { example: examples.controllerRegister }),
    responses: { 200: z.object({ uuid: z.string() }).strict() },
    handler: async ({ agentUuid, body }) => reply.ok(await registerController(agentUuid, body)),
  }),
  route({
    method: 'GET',
    path: '/api/v3/agent/models',
    auth: 'agent',
    summary: "The agent's models (none)",
    responses: { 200: z.object({ models: z.array(z.unknown()) }).strict() },
    handler: async () => reply.ok({ models: [] }),
  }),
  route({
    method: 'GET',
    path: '/api/v3/agent/runtimeClasses',
    auth: 'agent',
    summary: "The agent's runtime classes (none)",
    responses: { 200: z.object({ runtimeClasses: z.array(z.unknown()) }).strict() },
    handler: async () => reply.ok({ runtimeClasses: [] }),
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
