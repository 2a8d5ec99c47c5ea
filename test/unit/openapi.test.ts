import { describe, expect, it } from 'vitest';
import { allRoutes, docs } from '../../functions/api/openapi.js';
import { buildOpenApi } from '../../shared/http/openapi.js';

describe('the OpenAPI document', () => {
  it('documents every route the API serves, and nothing else', () => {
    // Act
    const served = allRoutes()
      .map((route) => `${route.method} ${route.path}`)
      .sort();

    // Assess
    expect(Object.keys(docs).sort()).toEqual(served);
  });

  it('marks public, agent and user routes with their security scheme', () => {
    // Act
    const document = buildOpenApi(allRoutes(), docs, { version: 'test' });

    // Assess
    expect(document.paths['/api/v3/status']?.get).toMatchObject({ security: [] });
    expect(document.paths['/api/v3/agent/provision']?.post).toMatchObject({ security: [] });
    expect(document.paths['/api/v3/agent/config/changes']?.get).toMatchObject({
      security: [{ agentToken: [] }],
    });
    expect(document.paths['/api/v3/services']?.post).toMatchObject({ security: [{ userToken: [] }] });
  });

  it('takes the request schema from the zod schema the handler validates with', () => {
    // Act
    const document = buildOpenApi(allRoutes(), docs, { version: 'test' });
    const operation = document.paths['/api/v3/services']!.post as {
      requestBody: { content: Record<string, { schema: unknown }> };
    };
    const body = operation.requestBody.content['application/json']?.schema;

    // Assess
    expect(body).toMatchObject({
      type: 'object',
      required: ['name', 'type', 'resource', 'targetPort'],
      additionalProperties: false,
      properties: { type: { enum: ['microservice', 'agent', 'k8s', 'external'] } },
    });
  });
});
