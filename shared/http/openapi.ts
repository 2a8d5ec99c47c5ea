import { z } from 'zod';
import type { ApiRoute, RouteAuth } from './api.js';
import { errorBody } from './api-schemas.js';

/** What the document says about one route; the schemas are the zod schemas the code uses. */
export interface RouteDoc {
  summary: string;
  /** A JSON body schema, or the multipart upload of a `kind: Service` YAML document. */
  body?: z.ZodType | 'yaml';
  /** Success status → body schema (`null`: no body). */
  responses: Record<number, z.ZodType | null>;
}

const jsonSchema = (schema: z.ZodType, io: 'input' | 'output') =>
  z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'openapi-3.0' }) as Record<string, unknown>;

function security(auth: RouteAuth | undefined, method: string) {
  const effective = auth ?? (method === 'GET' ? 'viewer' : 'admin');
  if (effective === 'public') return [];
  return effective === 'agent' ? [{ agentToken: [] }] : [{ userToken: [] }];
}

/** OpenAPI 3.0 for the given routes and their docs (one entry per `METHOD path`). */
export function buildOpenApi(routes: ApiRoute[], docs: Record<string, RouteDoc>, info: { version: string }) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const key = `${route.method} ${route.path}`;
    const doc = docs[key];
    if (!doc) throw new Error(`No OpenAPI doc for ${key}`);
    const parameters = [...route.path.matchAll(/\{([^}]+)\}/g)].map((match) => ({
      name: match[1],
      in: 'path',
      required: true,
      schema: { type: 'string', minLength: 1 },
    }));
    const responses: Record<string, unknown> = {};
    for (const [status, schema] of Object.entries(doc.responses)) {
      responses[status] = schema
        ? {
            description: doc.summary,
            content: { 'application/json': { schema: jsonSchema(schema, 'output') } },
          }
        : { description: doc.summary };
    }
    responses.default = {
      description: 'An error: the status tells the kind, the message names the field and the value',
      content: { 'application/json': { schema: jsonSchema(errorBody, 'output') } },
    };
    const operation: Record<string, unknown> = {
      summary: doc.summary,
      operationId: `${route.method.toLowerCase()}${route.path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
      security: security(route.auth, route.method),
      parameters,
      responses,
    };
    if (doc.body === 'yaml') {
      operation.requestBody = {
        required: true,
        content: {
          'multipart/form-data': {
            schema: {
              type: 'object',
              required: ['service'],
              properties: { service: { type: 'string', description: 'A kind: Service YAML document' } },
            },
          },
        },
      };
    } else if (doc.body) {
      operation.requestBody = {
        required: true,
        content: { 'application/json': { schema: jsonSchema(doc.body, 'input') } },
      };
    }
    paths[route.path] ??= {};
    paths[route.path]![route.method.toLowerCase()] = operation;
  }
  return {
    openapi: '3.0.3',
    info: {
      title: 'fogbridge',
      version: info.version,
      description:
        'TCP bridge services for ioFog / Datasance PoT: services, agents, the default router, and the agent protocol.',
    },
    components: {
      securitySchemes: {
        userToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        agentToken: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT (EdDSA, signed with the agent key)',
        },
      },
    },
    paths,
  };
}
