import { z } from 'zod';
import {
  createService,
  deleteService,
  getService,
  listServiceSites,
  listServices,
  requestServiceReconcile,
  updateServiceFromJson,
  updateServiceFromYaml,
} from '../../shared/commands/services.js';
import {
  createServiceBody,
  parseServiceDocument,
  patchServiceBody,
  rejectAssignedFields,
  serviceDocument,
} from '../../shared/domain/service-schema.js';
import { httpApi, jsonRequest, multipartRequest, reply, routesOf } from '../../shared/http/api.js';
import { reconcileAccepted, serviceView, sitesPageView } from '../../shared/http/api-schemas.js';
import { examples } from '../../shared/http/examples.js';

const route = routesOf('services');

/** `?after=<agent uuid>&limit=<1-1000>` (100 by default). */
const sitesQuery = z.object({
  after: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

/** The YAML document in multipart field `service`, as potctl uploads it. */
const serviceYaml = multipartRequest({
  field: 'service',
  document: serviceDocument,
  parse: parseServiceDocument,
  example: examples.serviceYaml,
});

export const routes = [
  route({
    method: 'GET',
    path: '/api/v3/services',
    auth: 'viewer',
    summary: 'List services, sorted by name',
    responses: { 200: z.array(serviceView) },
    handler: async () => reply.ok(await listServices()),
  }),
  route({
    method: 'POST',
    path: '/api/v3/services',
    auth: 'admin',
    summary: 'Create a service',
    request: jsonRequest(createServiceBody, { before: rejectAssignedFields, example: examples.service }),
    responses: { 201: serviceView },
    handler: async ({ body }) => reply.created(await createService(body, 'json')),
  }),
  route({
    method: 'POST',
    path: '/api/v3/services/yaml',
    auth: 'admin',
    summary: 'Create a service from YAML',
    request: serviceYaml,
    responses: { 201: serviceView },
    handler: async ({ body }) => reply.created(await createService(body, 'yaml')),
  }),
  route({
    method: 'PATCH',
    path: '/api/v3/services/yaml/{name}',
    auth: 'admin',
    summary: 'Update a service from YAML',
    request: serviceYaml,
    responses: { 204: null },
    handler: async ({ body, param }) => {
      await updateServiceFromYaml(param('name'), body);
      return reply.noContent();
    },
  }),
  route({
    method: 'GET',
    path: '/api/v3/services/{name}',
    auth: 'viewer',
    summary: 'Read a service, with its per-site status and the first sites that have not applied it',
    responses: { 200: serviceView },
    handler: async ({ param }) => reply.ok(await getService(param('name'))),
  }),
  route({
    method: 'GET',
    path: '/api/v3/services/{name}/sites',
    auth: 'viewer',
    summary:
      "Page through every site of a service (agents holding its listener or connector) and each one's state",
    query: sitesQuery,
    responses: { 200: sitesPageView },
    handler: async ({ param, queries }) => {
      const { after, limit } = queries as z.output<typeof sitesQuery>;
      return reply.ok(await listServiceSites(param('name'), after, limit));
    },
  }),
  route({
    method: 'PATCH',
    path: '/api/v3/services/{name}',
    auth: 'admin',
    summary: 'Update a service (partial)',
    request: jsonRequest(patchServiceBody, { before: rejectAssignedFields, example: examples.servicePatch }),
    responses: { 204: null },
    handler: async ({ body, param }) => {
      await updateServiceFromJson(param('name'), body);
      return reply.noContent();
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/v3/services/{name}',
    auth: 'admin',
    summary: 'Delete a service',
    responses: { 204: null },
    handler: async ({ param }) => {
      await deleteService(param('name'));
      return reply.noContent();
    },
  }),
  route({
    method: 'POST',
    path: '/api/v3/services/{name}/reconcile',
    auth: 'admin',
    summary: 'Re-drive a service',
    responses: { 202: reconcileAccepted },
    handler: async ({ param }) => {
      const name = param('name');
      await requestServiceReconcile(name);
      return reply.json(202, { name, provisioningStatus: 'pending' });
    },
  }),
];

export const handler = httpApi(routes);
