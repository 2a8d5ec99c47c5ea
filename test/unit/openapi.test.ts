import { describe, expect, it } from 'vitest';
import { allRoutes } from '../../functions/api/openapi.js';
import { buildOpenApi } from '../../shared/http/openapi.js';

type Operation = {
  security?: unknown;
  requestBody?: { content: Record<string, { schema: unknown; example?: unknown }> };
};
const operationOf = (document: ReturnType<typeof buildOpenApi>, method: string, path: string) =>
  (document.paths?.[path] as Record<string, Operation> | undefined)?.[method.toLowerCase()];

describe('the OpenAPI document', () => {
  it('marks public, agent and user routes with their security scheme', () => {
    // Act
    const document = buildOpenApi(allRoutes(), { version: 'test' });

    // Assess
    expect(operationOf(document, 'GET', '/api/v3/status')).toMatchObject({ security: [] });
    expect(operationOf(document, 'POST', '/api/v3/agent/provision')).toMatchObject({ security: [] });
    expect(operationOf(document, 'GET', '/api/v3/agent/config/changes')).toMatchObject({
      security: [{ agentToken: [] }],
    });
    expect(operationOf(document, 'POST', '/api/v3/services')).toMatchObject({
      security: [{ userToken: [] }],
    });
  });

  it('takes the request schema from the zod schema the handler validates with', () => {
    // Act
    const document = buildOpenApi(allRoutes(), { version: 'test' });
    const body = operationOf(document, 'POST', '/api/v3/services')?.requestBody?.content['application/json'];

    // Assess
    expect(body?.schema).toMatchObject({
      type: 'object',
      required: ['name', 'type', 'resource', 'targetPort'],
      additionalProperties: false,
      properties: { type: { enum: ['microservice', 'agent', 'k8s', 'external'] } },
    });
  });

  it.each(allRoutes().filter((route) => route.request))(
    'shows an example for $method $path that its own validator accepts',
    (route) => {
      // Prepare
      const request = route.request!;
      const document = buildOpenApi(allRoutes(), { version: 'test' });
      const content = operationOf(document, route.method, route.path)?.requestBody?.content ?? {};

      // Act
      const parse = () => request.parse(request.example as never);

      // Assess
      expect(request.example).toBeDefined();
      expect(parse).not.toThrow();
      if (request.kind === 'json') {
        expect(content['application/json']?.example).toEqual(request.example);
        expect(request.schema.safeParse(request.example).success).toBe(true);
      } else {
        expect(content['multipart/form-data']?.example).toEqual({ [request.field]: request.example });
      }
    },
  );
});
