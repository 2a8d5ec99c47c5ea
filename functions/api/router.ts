import { z } from 'zod';
import {
  getDefaultRouterView,
  getHubRouterConfig,
  putDefaultRouterFromBody,
} from '../../shared/commands/router.js';
import { putRouterBody } from '../../shared/domain/router-schema.js';
import { httpApi, jsonRequest, reply, routesOf } from '../../shared/http/api.js';
import { defaultRouterView } from '../../shared/http/api-schemas.js';
import { examples } from '../../shared/http/examples.js';

const route = routesOf('router');

export const routes = [
  route({
    method: 'GET',
    path: '/api/v3/router',
    auth: 'viewer',
    summary: 'The default router',
    responses: { 200: defaultRouterView },
    handler: async () => reply.ok(await getDefaultRouterView()),
  }),
  route({
    method: 'PUT',
    path: '/api/v3/router',
    auth: 'admin',
    summary: 'Register the default router',
    request: jsonRequest(putRouterBody, { example: examples.defaultRouter }),
    responses: { 200: defaultRouterView },
    handler: async ({ body }) => reply.ok(await putDefaultRouterFromBody(body)),
  }),
  route({
    method: 'GET',
    path: '/api/v3/router/hub-config',
    auth: 'viewer',
    summary: 'The hub document as last written',
    responses: { 200: z.unknown() },
    handler: async () => reply.ok(await getHubRouterConfig()),
  }),
];

export const handler = httpApi(routes);
