import { httpApi, reply, routesOf } from '../../shared/http/api.js';
import { statusView } from '../../shared/http/api-schemas.js';

const startedAt = Date.now();
const route = routesOf('status');

/**
 * The Controller API version fogbridge speaks: the Go SDK (potctl) picks its endpoints by
 * `versions.controller`, which must be a three-part version (≥ 2 uses the current routes).
 */
export const CONTROLLER_API_VERSION = '3.9.0';
const FOGBRIDGE_VERSION = '0.1.0';

/** Liveness, in the reference's shape: the function answers, so the API is up. */
export const routes = [
  route({
    method: 'GET',
    path: '/api/v3/status',
    auth: 'public',
    summary: 'Liveness and versions',
    responses: { 200: statusView },
    handler: async () =>
      reply.ok({
        status: 'online',
        timestamp: Date.now(),
        uptimeSec: (Date.now() - startedAt) / 1000,
        versions: { controller: CONTROLLER_API_VERSION, ecnViewer: '', fogbridge: FOGBRIDGE_VERSION },
      }),
  }),
];

export const handler = httpApi(routes);
