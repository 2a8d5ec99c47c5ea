import { type ApiRoute, httpApi, json } from '../../shared/http/api.js';

const startedAt = Date.now();

/** Liveness: the function answers, so the API is up (the local runtime listens only once ready). */
export const routes: ApiRoute[] = [
  {
    method: 'GET',
    path: '/api/v3/status',
    auth: 'public',
    handler: async () =>
      json(200, {
        status: 'online',
        timestamp: Date.now(),
        uptimeSeconds: Math.round((Date.now() - startedAt) / 1000),
      }),
  },
];

export const handler = httpApi(routes);
