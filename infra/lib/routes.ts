import { apiFunctions } from '../../functions/api/openapi.js';
import type { ApiFunctionName, HttpMethod } from '../../shared/http/api.js';

/**
 * The HTTP API's routes and the Lambda function that serves each, derived from the route records each
 * functions/api module declares (the same records the local runtime dispatches on and the OpenAPI
 * document is built from): adding a route is one edit, in its module.
 *
 * `auth`: `public` and `agent` routes have no API Gateway authorizer (an agent route verifies the
 * Edgelet's EdDSA token in code, against the key stored at provisioning); `user` routes (viewer or admin)
 * have the JWT authorizer, and the function checks the role on top.
 */
export type { ApiFunctionName, HttpMethod };
export type WorkerFunctionName = 'service-reconcile' | 'fog-reconcile' | 'sweeper';
export type ApiRouteAuth = 'public' | 'agent' | 'user';

export interface ApiRouteRow {
  method: HttpMethod;
  path: string;
  function: ApiFunctionName;
  auth: ApiRouteAuth;
}

/** Entry files, relative to the repository root. */
export const API_ENTRIES = Object.fromEntries(apiFunctions().map((fn) => [fn.name, fn.entry])) as Record<
  ApiFunctionName,
  string
>;

export const WORKER_ENTRIES: Record<WorkerFunctionName, string> = {
  'service-reconcile': 'functions/workers/service-reconcile.ts',
  'fog-reconcile': 'functions/workers/fog-reconcile.ts',
  sweeper: 'functions/workers/sweeper.ts',
};

export const API_ROUTES: readonly ApiRouteRow[] = apiFunctions().flatMap((fn) =>
  fn.routes.map((route) => ({
    method: route.method,
    path: route.path,
    function: fn.name,
    auth: route.auth === 'public' || route.auth === 'agent' ? route.auth : 'user',
  })),
);
