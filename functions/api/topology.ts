import { z } from 'zod';
import { readTopology } from '../../shared/commands/topology.js';
import { SITE_STATES } from '../../shared/domain/service-sites.js';
import { PAGE_LIMIT } from '../../shared/domain/topology.js';
import { httpApi, reply, routesOf } from '../../shared/http/api.js';
import { topologyView } from '../../shared/http/api-schemas.js';

const route = routesOf('topology');

/**
 * Filters (each narrows the sites and services shown; `state`, `upstream` and `name` only the sites: a
 * summary group's filter lists exactly its sites), the form, and a page of the full form.
 */
const topologyQuery = z.object({
  form: z.enum(['full', 'summary']).optional(),
  service: z.string().min(1).optional(),
  agent: z.string().min(1).optional(),
  tag: z.string().min(1).optional(),
  state: z.enum(SITE_STATES).optional(),
  upstream: z.string().min(1).optional(),
  name: z.string().min(1).max(253).optional(),
  after: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(PAGE_LIMIT.max).default(PAGE_LIMIT.default),
});

export const routes = [
  route({
    method: 'GET',
    path: '/api/v3/topology',
    auth: 'viewer',
    summary:
      'The network: sites, router and NATS links, and services with their per-site state; the summary form above 200 sites or services unless `form=full`',
    query: topologyQuery,
    responses: { 200: topologyView },
    handler: async ({ queries }) => reply.ok(await readTopology(queries as z.output<typeof topologyQuery>)),
  }),
];

export const handler = httpApi(routes);
