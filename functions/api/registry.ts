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
  type ApiEvent,
  type ApiRoute,
  httpApi,
  json,
  jsonBody,
  noContent,
  pathParameter,
} from '../../shared/http/api.js';

export const routes: ApiRoute[] = [
  {
    method: 'GET',
    path: '/api/v3/application',
    handler: async () => json(200, { applications: await listApplications() }),
  },
  {
    method: 'POST',
    path: '/api/v3/application',
    handler: async (event: ApiEvent) => json(201, await createApplication(jsonBody(event))),
  },
  {
    method: 'GET',
    path: '/api/v3/application/{name}',
    handler: async (event: ApiEvent) => json(200, await getApplicationByName(pathParameter(event, 'name'))),
  },
  {
    method: 'GET',
    path: '/api/v3/microservices',
    handler: async () => json(200, { microservices: await listMicroservices() }),
  },
  {
    method: 'POST',
    path: '/api/v3/microservices',
    handler: async (event: ApiEvent) => json(201, await createMicroservice(jsonBody(event))),
  },
  {
    method: 'GET',
    path: '/api/v3/microservices/{uuid}',
    handler: async (event: ApiEvent) => json(200, await getMicroservice(pathParameter(event, 'uuid'))),
  },
  {
    method: 'PATCH',
    path: '/api/v3/microservices/{uuid}',
    handler: async (event: ApiEvent) => {
      await updateMicroservice(pathParameter(event, 'uuid'), jsonBody(event));
      return noContent();
    },
  },
  {
    method: 'DELETE',
    path: '/api/v3/microservices/{uuid}',
    handler: async (event: ApiEvent) => {
      await deleteMicroservice(pathParameter(event, 'uuid'));
      return noContent();
    },
  },
];

export const handler = httpApi(routes);
