import {
  createDocument,
  type ZodOpenApiOperationObject,
  type ZodOpenApiPathsObject,
  type ZodOpenApiResponseObject,
} from 'zod-openapi';
import type { AnyRouteRecord } from './api.js';
import { errorBody } from './api-schemas.js';

function security(record: AnyRouteRecord) {
  if (record.auth === 'public') return [];
  return record.auth === 'agent' ? [{ agentToken: [] }] : [{ userToken: [] }];
}

function operationId(record: AnyRouteRecord): string {
  return `${record.method.toLowerCase()}${record.path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`;
}

function operation(record: AnyRouteRecord): ZodOpenApiOperationObject {
  const responses: Record<string, ZodOpenApiResponseObject> = {};
  for (const [status, schema] of Object.entries(record.responses)) {
    const types = record.produces ?? ['application/json'];
    responses[status] = schema
      ? { description: record.summary, content: Object.fromEntries(types.map((type) => [type, { schema }])) }
      : { description: record.summary };
  }
  responses.default = {
    description: 'An error: the status tells the kind, the message names the field and the value',
    content: { 'application/json': { schema: errorBody } },
  };
  const parameters = [...record.path.matchAll(/\{([^}]+)\}/g)].map((match) => ({
    name: match[1]!,
    in: 'path' as const,
    required: true,
    schema: { type: 'string' as const, minLength: 1 },
  }));
  const result: ZodOpenApiOperationObject = {
    summary: record.summary,
    operationId: operationId(record),
    security: security(record),
    parameters,
    ...(record.query ? { requestParams: { query: record.query } } : {}),
    responses,
  };
  const request = record.request;
  if (request?.kind === 'json') {
    result.requestBody = {
      required: true,
      content: {
        'application/json': {
          schema: request.schema,
          ...(request.example === undefined ? {} : { example: request.example }),
        },
      },
    };
  } else if (request?.kind === 'multipart') {
    result.requestBody = {
      required: true,
      content: {
        'multipart/form-data': {
          schema: {
            type: 'object',
            required: [request.field],
            properties: {
              [request.field]: { type: 'string', description: 'A YAML document (see the example)' },
            },
          },
          ...(request.example === undefined ? {} : { example: { [request.field]: request.example } }),
        },
      },
    };
  }
  return result;
}

/** OpenAPI 3.0 for the given route records; the schemas are the ones the handlers validate with. */
export function buildOpenApi(records: readonly AnyRouteRecord[], info: { version: string }) {
  const paths: ZodOpenApiPathsObject = {};
  for (const record of records) {
    paths[record.path] ??= {};
    (paths[record.path] as Record<string, ZodOpenApiOperationObject>)[record.method.toLowerCase()] =
      operation(record);
  }
  return createDocument({
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
  });
}
