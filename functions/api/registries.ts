import { z } from 'zod';
import {
  createImageRegistry,
  listImageRegistryViews,
  removeImageRegistry,
} from '../../shared/commands/image-registries.js';
import { createImageRegistryBody } from '../../shared/domain/image-registry-schema.js';
import { httpApi, jsonRequest, reply, routesOf } from '../../shared/http/api.js';
import { imageRegistryView } from '../../shared/http/api-schemas.js';
import { examples } from '../../shared/http/examples.js';

const route = routesOf('registries');

/** The container registries microservice images come from (`registryId`). */
export const routes = [
  route({
    method: 'GET',
    path: '/api/v3/registries',
    auth: 'viewer',
    summary: 'List container registries',
    responses: { 200: z.object({ registries: z.array(imageRegistryView) }).strict() },
    handler: async () => reply.ok({ registries: await listImageRegistryViews() }),
  }),
  route({
    method: 'POST',
    path: '/api/v3/registries',
    auth: 'admin',
    summary: 'Add a container registry',
    request: jsonRequest(createImageRegistryBody, { example: examples.imageRegistry }),
    responses: { 201: z.object({ id: z.number().int() }).strict() },
    handler: async ({ body }) => reply.created(await createImageRegistry(body)),
  }),
  route({
    method: 'DELETE',
    path: '/api/v3/registries/{id}',
    auth: 'admin',
    summary: 'Remove a container registry no microservice uses',
    responses: { 204: null },
    handler: async ({ param }) => {
      await removeImageRegistry(param('id'));
      return reply.noContent();
    },
  }),
];

export const handler = httpApi(routes);
