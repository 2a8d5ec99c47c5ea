/**
 * The HTTP API's routes, one row per method and path, and the Lambda function that serves each. The stack
 * creates its routes from this table; test/infra checks it against the `routes` that every
 * functions/api/*.ts module serves, so a route added to a handler without a row here fails the tests.
 *
 * `auth`: `public` and `agent` routes have no API Gateway authorizer (an agent route verifies the
 * Edgelet's EdDSA token in code, against the key stored at provisioning); `user` routes have the JWT
 * authorizer, and the function checks the role (viewer for GET, admin otherwise) on top.
 */
export type ApiFunctionName = 'services' | 'agents' | 'registry' | 'router' | 'status' | 'openapi' | 'agent';
export type WorkerFunctionName = 'service-reconcile' | 'fog-reconcile' | 'sweeper';
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type ApiRouteAuth = 'public' | 'agent' | 'user';

export interface ApiRouteRow {
  method: HttpMethod;
  path: string;
  function: ApiFunctionName;
  auth: ApiRouteAuth;
}

/** Entry files, relative to the repository root. */
export const API_ENTRIES: Record<ApiFunctionName, string> = {
  services: 'functions/api/services.ts',
  agents: 'functions/api/agents.ts',
  registry: 'functions/api/registry.ts',
  router: 'functions/api/router.ts',
  status: 'functions/api/status.ts',
  openapi: 'functions/api/openapi.ts',
  agent: 'functions/api/agent.ts',
};

export const WORKER_ENTRIES: Record<WorkerFunctionName, string> = {
  'service-reconcile': 'functions/workers/service-reconcile.ts',
  'fog-reconcile': 'functions/workers/fog-reconcile.ts',
  sweeper: 'functions/workers/sweeper.ts',
};

const user = (method: HttpMethod, path: string, fn: ApiFunctionName): ApiRouteRow => ({
  method,
  path,
  function: fn,
  auth: 'user',
});

export const API_ROUTES: readonly ApiRouteRow[] = [
  { method: 'GET', path: '/api/v3/status', function: 'status', auth: 'public' },
  { method: 'GET', path: '/api/v3/openapi.json', function: 'openapi', auth: 'public' },

  user('GET', '/api/v3/services', 'services'),
  user('POST', '/api/v3/services', 'services'),
  user('POST', '/api/v3/services/yaml', 'services'),
  user('PATCH', '/api/v3/services/yaml/{name}', 'services'),
  user('GET', '/api/v3/services/{name}', 'services'),
  user('PATCH', '/api/v3/services/{name}', 'services'),
  user('DELETE', '/api/v3/services/{name}', 'services'),
  user('POST', '/api/v3/services/{name}/reconcile', 'services'),

  user('GET', '/api/v3/iofog-list', 'agents'),
  user('POST', '/api/v3/iofog', 'agents'),
  user('GET', '/api/v3/iofog/{uuid}', 'agents'),
  user('PATCH', '/api/v3/iofog/{uuid}', 'agents'),
  user('DELETE', '/api/v3/iofog/{uuid}', 'agents'),
  user('GET', '/api/v3/iofog/{uuid}/provisioning-key', 'agents'),
  user('GET', '/api/v3/iofog/{uuid}/router-config', 'agents'),

  user('GET', '/api/v3/application', 'registry'),
  user('POST', '/api/v3/application', 'registry'),
  user('GET', '/api/v3/application/{name}', 'registry'),
  user('GET', '/api/v3/microservices', 'registry'),
  user('POST', '/api/v3/microservices', 'registry'),
  user('GET', '/api/v3/microservices/{uuid}', 'registry'),
  user('PATCH', '/api/v3/microservices/{uuid}', 'registry'),
  user('DELETE', '/api/v3/microservices/{uuid}', 'registry'),

  user('GET', '/api/v3/router', 'router'),
  user('PUT', '/api/v3/router', 'router'),
  user('GET', '/api/v3/router/hub-config', 'router'),

  { method: 'POST', path: '/api/v3/agent/provision', function: 'agent', auth: 'public' },
  { method: 'GET', path: '/api/v3/agent/config/changes', function: 'agent', auth: 'agent' },
  { method: 'PATCH', path: '/api/v3/agent/config/changes', function: 'agent', auth: 'agent' },
  { method: 'GET', path: '/api/v3/agent/microservices', function: 'agent', auth: 'agent' },
  { method: 'GET', path: '/api/v3/agent/microservices/{uuid}', function: 'agent', auth: 'agent' },
];
