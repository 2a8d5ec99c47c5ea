import {
  getDefaultRouterView,
  getHubRouterConfig,
  putDefaultRouterFromBody,
} from '../../shared/commands/router.js';
import { type ApiEvent, type ApiRoute, httpApi, json, jsonBody } from '../../shared/http/api.js';

export const routes: ApiRoute[] = [
  { method: 'GET', path: '/api/v3/router', handler: async () => json(200, await getDefaultRouterView()) },
  {
    method: 'PUT',
    path: '/api/v3/router',
    handler: async (event: ApiEvent) => json(200, await putDefaultRouterFromBody(jsonBody(event))),
  },
  {
    method: 'GET',
    path: '/api/v3/router/hub-config',
    handler: async () => json(200, await getHubRouterConfig()),
  },
];

export const handler = httpApi(routes);
