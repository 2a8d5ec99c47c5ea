import middy from '@middy/core';
import {
  createServiceFromJson,
  createServiceFromYaml,
  deleteService,
  getService,
  listServices,
  requestServiceReconcile,
  updateServiceFromJson,
  updateServiceFromYaml,
} from '../../shared/commands/services.js';
import {
  type ApiEvent,
  type ApiResult,
  type ApiRoute,
  httpApi,
  json,
  jsonBody,
  noContent,
  pathParameter,
} from '../../shared/http/api.js';
import { multipartBody, multipartField } from '../../shared/http/multipart.js';

/** multipart/form-data with the YAML document in field `service`, as the reference controller takes it. */
const yamlRoute = (handler: (event: ApiEvent) => Promise<ApiResult>) =>
  middy<ApiEvent, ApiResult>().use(multipartBody()).handler(handler);

export const routes: ApiRoute[] = [
  { method: 'GET', path: '/api/v3/services', handler: async () => json(200, await listServices()) },
  {
    method: 'POST',
    path: '/api/v3/services',
    handler: async (event: ApiEvent) => json(201, await createServiceFromJson(jsonBody(event))),
  },
  {
    method: 'POST',
    path: '/api/v3/services/yaml',
    handler: yamlRoute(async (event) =>
      json(201, await createServiceFromYaml(multipartField(event, 'service'))),
    ),
  },
  {
    method: 'PATCH',
    path: '/api/v3/services/yaml/{name}',
    handler: yamlRoute(async (event) => {
      await updateServiceFromYaml(pathParameter(event, 'name'), multipartField(event, 'service'));
      return noContent();
    }),
  },
  {
    method: 'GET',
    path: '/api/v3/services/{name}',
    handler: async (event: ApiEvent) => json(200, await getService(pathParameter(event, 'name'))),
  },
  {
    method: 'PATCH',
    path: '/api/v3/services/{name}',
    handler: async (event: ApiEvent) => {
      await updateServiceFromJson(pathParameter(event, 'name'), jsonBody(event));
      return noContent();
    },
  },
  {
    method: 'DELETE',
    path: '/api/v3/services/{name}',
    handler: async (event: ApiEvent) => {
      await deleteService(pathParameter(event, 'name'));
      return noContent();
    },
  },
  {
    method: 'POST',
    path: '/api/v3/services/{name}/reconcile',
    handler: async (event: ApiEvent) => {
      const name = pathParameter(event, 'name');
      await requestServiceReconcile(name);
      return json(202, { name, provisioningStatus: 'pending' });
    },
  },
];

export const handler = httpApi(routes);
