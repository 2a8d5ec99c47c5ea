import { httpApi, reply, routesOf } from '../../shared/http/api.js';
import { statusView } from '../../shared/http/api-schemas.js';

const startedAt = Date.now();
const route = routesOf('status');

/** Liveness: the function answers, so the API is up (the local runtime listens only once ready). */
export const routes = [
  route({
    method: 'GET',
    path: '/api/v3/status',
    auth: 'public',
    summary: 'Liveness',
    responses: { 200: statusView },
    handler: async () =>
      reply.ok({
        status: 'online',
        timestamp: Date.now(),
        uptimeSeconds: Math.round((Date.now() - startedAt) / 1000),
      }),
  }),
];

export const handler = httpApi(routes);
