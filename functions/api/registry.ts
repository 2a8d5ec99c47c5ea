import { z } from 'zod';
import {
  applyApplicationDeclaration,
  createApplication,
  deleteApplication,
  getApplicationView,
  listApplications,
  updateApplication,
} from '../../shared/commands/applications.js';
import {
  createMicroservice,
  createMicroserviceFromYaml,
  deleteMicroservice,
  getMicroservice,
  listMicroservices,
  updateMicroservice,
  updateMicroserviceFromYaml,
} from '../../shared/commands/microservices.js';
import {
  applicationDocument,
  createApplicationBody,
  createMicroserviceBody,
  microserviceDocument,
  parseApplicationDocument,
  parseMicroserviceDocument,
  patchApplicationBody,
  patchMicroserviceBody,
} from '../../shared/domain/registry-schema.js';
import { httpApi, jsonRequest, multipartRequest, reply, routesOf } from '../../shared/http/api.js';
import { applicationView, createdMicroservice, microserviceView } from '../../shared/http/api-schemas.js';
import { examples } from '../../shared/http/examples.js';

const route = routesOf('registry');

/** potctl's uploads: the YAML document in multipart field `application` / `microservice`. */
const applicationYaml = multipartRequest({
  field: 'application',
  document: applicationDocument,
  parse: parseApplicationDocument,
  example: examples.applicationYaml,
});
const microserviceYaml = multipartRequest({
  field: 'microservice',
  document: microserviceDocument,
  parse: parseMicroserviceDocument,
  example: examples.microserviceYaml,
});

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
    request: jsonRequest(createApplicationBody, { example: examples.application }),
    responses: { 201: applicationView },
    handler: async ({ body }) => reply.created(await createApplication(body)),
  }),
  route({
    method: 'POST',
    path: '/api/v3/application/yaml',
    auth: 'admin',
    summary: 'Create an application and its microservices from YAML',
    request: applicationYaml,
    responses: { 201: applicationView },
    handler: async ({ body }) => reply.created(await applyApplicationDeclaration(body, 'create')),
  }),
  route({
    method: 'PUT',
    path: '/api/v3/application/yaml/{name}',
    auth: 'admin',
    summary: 'Replace an application and its microservices from YAML',
    request: applicationYaml,
    responses: { 204: null },
    handler: async ({ body, param }) => {
      await applyApplicationDeclaration(body, { replace: param('name') });
      return reply.noContent();
    },
  }),
  route({
    method: 'GET',
    path: '/api/v3/application/{name}',
    auth: 'viewer',
    summary: 'Read an application',
    responses: { 200: applicationView },
    handler: async ({ param }) => reply.ok(await getApplicationView(param('name'))),
  }),
  route({
    method: 'PATCH',
    path: '/api/v3/application/{name}',
    auth: 'admin',
    summary: 'Start, stop or describe an application',
    request: jsonRequest(patchApplicationBody, { example: examples.applicationPatch }),
    responses: { 204: null },
    handler: async ({ body, param }) => {
      await updateApplication(param('name'), body);
      return reply.noContent();
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/v3/application/{name}',
    auth: 'admin',
    summary: 'Delete an application and its microservices',
    responses: { 204: null },
    handler: async ({ param }) => {
      await deleteApplication(param('name'));
      return reply.noContent();
    },
  }),
  route({
    method: 'GET',
    path: '/api/v3/microservices',
    auth: 'viewer',
    summary: 'List microservices (?application= for one application)',
    responses: { 200: z.object({ microservices: z.array(microserviceView) }).strict() },
    handler: async ({ query }) => reply.ok({ microservices: await listMicroservices(query('application')) }),
  }),
  route({
    method: 'POST',
    path: '/api/v3/microservices',
    auth: 'admin',
    summary: 'Register a microservice',
    request: jsonRequest(createMicroserviceBody, { example: examples.microservice }),
    responses: { 201: createdMicroservice },
    handler: async ({ body }) => reply.created(await createMicroservice(body)),
  }),
  route({
    method: 'POST',
    path: '/api/v3/microservices/yaml',
    auth: 'admin',
    summary: 'Register a microservice from YAML',
    request: microserviceYaml,
    responses: { 201: createdMicroservice },
    handler: async ({ body }) => reply.created(await createMicroserviceFromYaml(body)),
  }),
  route({
    method: 'PATCH',
    path: '/api/v3/microservices/yaml/{uuid}',
    auth: 'admin',
    summary: 'Update a microservice from YAML',
    request: microserviceYaml,
    responses: { 204: null },
    handler: async ({ body, param }) => {
      await updateMicroserviceFromYaml(param('uuid'), body);
      return reply.noContent();
    },
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
    request: jsonRequest(patchMicroserviceBody, { example: examples.microservicePatch }),
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
