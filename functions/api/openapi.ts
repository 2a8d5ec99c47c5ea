import { z } from 'zod';
import {
  type AnyRouteRecord,
  type ApiFunctionName,
  httpApi,
  reply,
  routesOf,
} from '../../shared/http/api.js';
import { buildOpenApi } from '../../shared/http/openapi.js';
import * as agentProtocol from './agent-protocol.js';
import * as agents from './agents.js';
import * as certificates from './certificates.js';
import * as nats from './nats.js';
import * as registries from './registries.js';
import * as registry from './registry.js';
import * as router from './router.js';
import * as services from './services.js';
import * as status from './status.js';
import * as topology from './topology.js';
import * as ui from './ui.js';

const route = routesOf('openapi');

export const routes = [
  route({
    method: 'GET',
    path: '/api/v3/openapi.json',
    auth: 'public',
    summary: 'This document',
    responses: { 200: z.object({}).passthrough() },
    handler: async () => reply.ok(document()),
  }),
];

export const handler = httpApi(routes);

export interface ApiFunction {
  name: ApiFunctionName;
  /** The entry file Lambda runs, relative to the repository root. */
  entry: string;
  routes: readonly AnyRouteRecord[];
  handler: typeof handler;
}

/**
 * Every API function with its route records: the one list the CDK route table, the local runtime's
 * dispatch and this document are built from.
 */
export function apiFunctions(): ApiFunction[] {
  const modules: [ApiFunctionName, { routes: readonly AnyRouteRecord[]; handler: typeof handler }][] = [
    ['status', status],
    ['openapi', { routes, handler }],
    ['services', services],
    ['agents', agents],
    ['registry', registry],
    ['registries', registries],
    ['certificates', certificates],
    ['nats', nats],
    ['router', router],
    ['agent-protocol', agentProtocol],
    ['topology', topology],
    ['ui', ui],
  ];
  return modules.map(([name, module]) => ({
    name,
    entry: `functions/api/${name}.ts`,
    routes: module.routes,
    handler: module.handler,
  }));
}

/** Every route record of every API function. */
export const allRoutes = (): AnyRouteRecord[] => apiFunctions().flatMap((fn) => [...fn.routes]);

let cached: ReturnType<typeof buildOpenApi> | undefined;
function document() {
  cached ??= buildOpenApi(allRoutes(), { version: '1.0.0' });
  return cached;
}
