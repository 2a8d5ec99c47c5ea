import { z } from 'zod';
import { type ApiRoute, httpApi, json } from '../../shared/http/api.js';
import {
  ackBody,
  agentMicroserviceView,
  agentView,
  applicationView,
  changesView,
  createdAgent,
  createdMicroservice,
  defaultRouterView,
  microserviceView,
  provisionBody,
  provisionedView,
  provisioningKeyView,
  putRouterBody,
  reconcileAccepted,
  requestSchemas,
  routerConfigView,
  serviceView,
  statusView,
} from '../../shared/http/api-schemas.js';
import { buildOpenApi, type RouteDoc } from '../../shared/http/openapi.js';
import { routes as agentRoutes } from './agent.js';
import { routes as agentsRoutes } from './agents.js';
import { routes as registryRoutes } from './registry.js';
import { routes as routerRoutes } from './router.js';
import { routes as servicesRoutes } from './services.js';
import { routes as statusRoutes } from './status.js';

/** The document for every route, keyed `METHOD path`; a test checks each route has one. */
export const docs: Record<string, RouteDoc> = {
  'GET /api/v3/status': { summary: 'Liveness', responses: { 200: statusView } },
  'GET /api/v3/openapi.json': { summary: 'This document', responses: { 200: z.object({}).passthrough() } },
  'GET /api/v3/services': {
    summary: 'List services, sorted by name',
    responses: { 200: z.array(serviceView) },
  },
  'POST /api/v3/services': {
    summary: 'Create a service',
    body: requestSchemas.createServiceBody,
    responses: { 201: serviceView },
  },
  'POST /api/v3/services/yaml': {
    summary: 'Create a service from YAML',
    body: 'yaml',
    responses: { 201: serviceView },
  },
  'PATCH /api/v3/services/yaml/{name}': {
    summary: 'Update a service from YAML',
    body: 'yaml',
    responses: { 204: null },
  },
  'GET /api/v3/services/{name}': { summary: 'Read a service', responses: { 200: serviceView } },
  'PATCH /api/v3/services/{name}': {
    summary: 'Update a service (partial)',
    body: requestSchemas.patchServiceBody,
    responses: { 204: null },
  },
  'DELETE /api/v3/services/{name}': { summary: 'Delete a service', responses: { 204: null } },
  'POST /api/v3/services/{name}/reconcile': {
    summary: 'Re-drive a service',
    responses: { 202: reconcileAccepted },
  },
  'GET /api/v3/iofog-list': {
    summary: 'List agents',
    responses: { 200: z.object({ fogs: z.array(agentView) }).strict() },
  },
  'POST /api/v3/iofog': {
    summary: 'Create an agent',
    body: requestSchemas.createAgentBody,
    responses: { 201: createdAgent },
  },
  'GET /api/v3/iofog/{uuid}': { summary: 'Read an agent', responses: { 200: agentView } },
  'PATCH /api/v3/iofog/{uuid}': {
    summary: 'Update an agent (partial)',
    body: requestSchemas.patchAgentBody,
    responses: { 204: null },
  },
  'DELETE /api/v3/iofog/{uuid}': { summary: 'Delete an agent', responses: { 204: null } },
  'GET /api/v3/iofog/{uuid}/provisioning-key': {
    summary: 'Issue a provisioning key',
    responses: { 200: provisioningKeyView },
  },
  'GET /api/v3/iofog/{uuid}/router-config': {
    summary: "An agent's router config",
    responses: { 200: routerConfigView },
  },
  'GET /api/v3/application': {
    summary: 'List applications',
    responses: { 200: z.object({ applications: z.array(applicationView) }).strict() },
  },
  'POST /api/v3/application': {
    summary: 'Create an application',
    body: requestSchemas.createApplicationBody,
    responses: { 201: applicationView },
  },
  'GET /api/v3/application/{name}': { summary: 'Read an application', responses: { 200: applicationView } },
  'GET /api/v3/microservices': {
    summary: 'List microservices',
    responses: { 200: z.object({ microservices: z.array(microserviceView) }).strict() },
  },
  'POST /api/v3/microservices': {
    summary: 'Register a microservice',
    body: requestSchemas.createMicroserviceBody,
    responses: { 201: createdMicroservice },
  },
  'GET /api/v3/microservices/{uuid}': {
    summary: 'Read a microservice',
    responses: { 200: microserviceView },
  },
  'PATCH /api/v3/microservices/{uuid}': {
    summary: 'Move or edit a microservice',
    body: requestSchemas.patchMicroserviceBody,
    responses: { 204: null },
  },
  'DELETE /api/v3/microservices/{uuid}': { summary: 'Delete a microservice', responses: { 204: null } },
  'GET /api/v3/router': { summary: 'The default router', responses: { 200: defaultRouterView } },
  'PUT /api/v3/router': {
    summary: 'Register the default router',
    body: putRouterBody,
    responses: { 200: defaultRouterView },
  },
  'GET /api/v3/router/hub-config': {
    summary: 'The hub document as last written',
    responses: { 200: z.unknown() },
  },
  'POST /api/v3/agent/provision': {
    summary: 'Provision an agent with a key',
    body: provisionBody,
    responses: { 200: provisionedView },
  },
  'GET /api/v3/agent/config/changes': {
    summary: "The agent's change flags",
    responses: { 200: changesView },
  },
  'PATCH /api/v3/agent/config/changes': {
    summary: 'Acknowledge changes',
    body: ackBody,
    responses: { 200: z.object({}).strict() },
  },
  'GET /api/v3/agent/microservices': {
    summary: "The agent's microservices",
    responses: { 200: z.object({ microservices: z.array(agentMicroserviceView) }).strict() },
  },
  'GET /api/v3/agent/microservices/{uuid}': {
    summary: "One of the agent's microservices",
    responses: { 200: z.object({ microservice: agentMicroserviceView }).strict() },
  },
};

export const routes: ApiRoute[] = [
  {
    method: 'GET',
    path: '/api/v3/openapi.json',
    auth: 'public',
    handler: async () => json(200, document()),
  },
];

/** Every route the API serves, in one list (the OpenAPI document, the CDK routes, the local runtime). */
export const allRoutes = (): ApiRoute[] => [
  ...statusRoutes,
  ...routes,
  ...servicesRoutes,
  ...agentsRoutes,
  ...registryRoutes,
  ...routerRoutes,
  ...agentRoutes,
];

let cached: ReturnType<typeof buildOpenApi> | undefined;
function document() {
  cached ??= buildOpenApi(allRoutes(), docs, { version: '1.0.0' });
  return cached;
}

export const handler = httpApi(routes);
