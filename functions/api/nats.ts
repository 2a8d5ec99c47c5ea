import { getNatsHubView, natsBootstrap, putNatsHubFromBody } from '../../shared/commands/nats.js';
import { putNatsHubBody } from '../../shared/domain/nats-schema.js';
import { httpApi, jsonRequest, reply, routesOf } from '../../shared/http/api.js';
import { natsBootstrapView, natsHubView } from '../../shared/http/api-schemas.js';
import { examples } from '../../shared/http/examples.js';

const route = routesOf('nats');

/** The NATS hub leaves dial, and the operator's bootstrap of the NATS fabric's identities. */
export const routes = [
  route({
    method: 'GET',
    path: '/api/v3/nats/hub',
    auth: 'viewer',
    summary: 'The NATS hub',
    responses: { 200: natsHubView },
    handler: async () => reply.ok(await getNatsHubView()),
  }),
  route({
    method: 'PUT',
    path: '/api/v3/nats/hub',
    auth: 'admin',
    summary: 'Register the NATS hub (0 or a missing port takes the default)',
    request: jsonRequest(putNatsHubBody, { example: examples.natsHub }),
    responses: { 200: natsHubView },
    handler: async ({ body }) => reply.ok(await putNatsHubFromBody(body)),
  }),
  route({
    method: 'GET',
    path: '/api/v3/nats/bootstrap',
    auth: 'admin',
    summary: 'The NATS operator, system account and hub user (Kubernetes control plane only; made once)',
    responses: { 200: natsBootstrapView },
    handler: async () => reply.ok(await natsBootstrap()),
  }),
];

export const handler = httpApi(routes);
