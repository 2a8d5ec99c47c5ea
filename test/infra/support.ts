import { readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { routes as agentProtocolRoutes } from '../../functions/api/agent-protocol.js';
import { routes as agentsRoutes } from '../../functions/api/agents.js';
import { routes as certificatesRoutes } from '../../functions/api/certificates.js';
import { routes as natsRoutes } from '../../functions/api/nats.js';
import { routes as openapiRoutes } from '../../functions/api/openapi.js';
import { routes as registriesRoutes } from '../../functions/api/registries.js';
import { routes as registryRoutes } from '../../functions/api/registry.js';
import { routes as routerRoutes } from '../../functions/api/router.js';
import { routes as servicesRoutes } from '../../functions/api/services.js';
import { routes as statusRoutes } from '../../functions/api/status.js';
import { routes as topologyRoutes } from '../../functions/api/topology.js';
import { routes as uiRoutes } from '../../functions/api/ui.js';
import { createApp } from '../../infra/lib/app.js';
import { STUB_CODE_CONTEXT } from '../../infra/lib/fogbridge-function.js';
import type { ApiFunctionName, ApiRouteAuth } from '../../infra/lib/routes.js';
import type { AnyRouteRecord } from '../../shared/http/api.js';

export const REQUIRED_CONTEXT = {
  authIssuer: 'https://issuer.example.com',
  authAudience: 'fogbridge',
};

export const KUBERNETES_CONTEXT = {
  controlPlane: 'kubernetes',
  controllerNamespace: 'iofog',
  eksClusterName: 'edge-cluster',
  eksClusterEndpoint: 'https://0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com',
  eksClusterCa: 'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t',
};

/**
 * Synthesizes the stack in-process with stub function code (template assertions do not need the
 * bundles; test/infra/synth.test.ts runs the real `cdk synth` with esbuild bundling).
 */
export function synthesize(context: Record<string, unknown> = {}) {
  const { app, stack } = createApp({
    context: { ...REQUIRED_CONTEXT, [STUB_CODE_CONTEXT]: true, ...context },
  });
  return { app, stack, template: Template.fromStack(stack) };
}

export interface HandlerRoute {
  method: string;
  path: string;
  function: ApiFunctionName;
  auth: ApiRouteAuth;
}

/** The routes each functions/api module serves, imported from the module itself. */
const MODULE_ROUTES: Record<ApiFunctionName, readonly AnyRouteRecord[]> = {
  services: servicesRoutes,
  agents: agentsRoutes,
  registry: registryRoutes,
  registries: registriesRoutes,
  certificates: certificatesRoutes,
  nats: natsRoutes,
  router: routerRoutes,
  status: statusRoutes,
  openapi: openapiRoutes,
  'agent-protocol': agentProtocolRoutes,
  topology: topologyRoutes,
  ui: uiRoutes,
};

/**
 * Every route record, read from the module that serves it (its exported `routes`, the array its handler
 * wraps), with `auth` as API Gateway sees it: `public`, `agent`, or `user` for a role route.
 */
export function handlerRoutes(): HandlerRoute[] {
  return (Object.entries(MODULE_ROUTES) as [ApiFunctionName, readonly AnyRouteRecord[]][]).flatMap(
    ([fn, routes]) =>
      routes.map((route) => ({
        method: route.method,
        path: route.path,
        function: fn,
        auth: route.auth === 'public' || route.auth === 'agent' ? route.auth : 'user',
      })),
  );
}

/** The API modules on disk, by file name (a new module must get an entry in infra/lib/routes.ts). */
export function apiModulesOnDisk(repoRoot: string): string[] {
  return readdirSync(join(repoRoot, 'functions/api'))
    .filter((name) => name.endsWith('.ts'))
    .map((name) => basename(name, '.ts'))
    .sort();
}
