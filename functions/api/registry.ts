import { z } from 'zod';
import {
  createApplication,
  createMicroservice,
  deleteMicroservice,
  getApplicationByName,
  getMicroservice,
  listApplications,
  listMicroservices,
  updateMicroservice,
} from '../../shared/commands/microservices.js';
import {
  createApplicationBody,
  createMicroserviceBody,
  modelledApplication,
  modelledMicroservice,
  modelledMicroservicePatch,
  patchMicroserviceBody,
} from '../../shared/domain/registry-schema.js';
import { httpApi, jsonRequest, reply, routesOf } from '../../shared/http/api.js';
import { applicationView, createdMicroservice, microserviceView } from '../../shared/http/api-schemas.js';
import { examples } from '../../shared/http/examples.js';

const route = routesOf('registry');

export const routes = [
  route({
    method: 'GET',
    path: '/api/v3/application',
    auth: 'viewer',
    summary: 'List applications',
    responses: { 200: z.object({ applications: z.array(applicationView) }).strict() },
    handler: async () => reply.ok({ applications: await listApplications() }),
  }),
  route({
    method: 'POST',
    path: '/api/v3/application',
    auth: 'admin',
    summary: 'Create an application',
    request: jsonRequest(createApplicationBody, {
      after: modelledApplication,
      example: examples.application,
    }),
    responses: { 201: applicationView },
    handler: async ({ body }) => reply.created(await createApplication(body)),
  }),
  route({
    method: 'GET',
    path: '/api/v3/application/{name}',
    auth: 'viewer',
    summary: 'Read an application',
    responses: { 200: applicationView },
    handler: async ({ param }) => reply.ok(await getApplicationByName(param('name'))),
  }),
  route({
    method: 'GET',
    path: '/api/v3/microservices',
    auth: 'viewer',
    summary: 'List microservices',
    responses: { 200: z.object({ microservices: z.array(microserviceView) }).strict() },
    handler: async () => reply.ok({ microservices: await listMicroservices() }),
  }),
  route({
    method: 'POST',
    path: '/api/v3/microservices',
    auth: 'admin',
    summary: 'Register a microservice',
    request: jsonRequest(createMicroserviceBody, {
      after: modelledMicroservice,
      example: examples.microservice,
    }),
    responses: { 201: createdMicroservice },
    handler: async ({ body }) => reply.created(await createMicroservice(body)),
  }),
  route({
    method: 'GET',
    path: '/api/v3/microservices/{uuid}',
    auth: 'viewer',
    summary: 'Read a microservice',
    responses: { 200: microserviceView },
    handler: async ({ param }) => reply.ok(await getMicroservice(param('uuid'))),
  }),
  route({
    method: 'PATCH',
    path: '/api/v3/microservices/{uuid}',
    auth: 'admin',
    summary: 'Move or edit a microservice',
    request: jsonRequest(patchMicroserviceBody, {
      after: modelledMicroservicePatch,
      example: examples.microservicePatch,
    }),
    responses: { 204: null },
    handler: async ({ body, param }) => {
      await updateMicroservice(param('uuid'), body);
      return reply.noContent();
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/v3/microservices/{uuid}',
    auth: 'admin',
    summary: 'Delete a microservice',
    responses: { 204: null },
    handler: async ({ param }) => {
      await deleteMicroservice(param('uuid'));
      return reply.noContent();
    },
  }),
];

export const handler = httpApi(routes);
