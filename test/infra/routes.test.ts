import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allRoutes, apiFunctions } from '../../functions/api/openapi.js';
import { apiGatewayAdapter } from '../../infra/local/api-gateway.js';
import { buildOpenApi } from '../../shared/http/openapi.js';
import { synthesize } from './support.js';

/**
 * A route is declared once, as a record next to its handler. The three places that route requests in
 * production and locally, and the document clients read, are all built from those records: this
 * checks that they agree with them, and so with each other.
 */
const recordKeys = () => allRoutes().map((route) => `${route.method} ${route.path} -> ${route.function}`);
const withParameters = (path: string) => path.replace(/\{[^}]+\}/g, 'x-1');
const pascal = (name: string) =>
  name
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');

let localUrl: string;
let stopLocal: () => Promise<void>;

beforeAll(async () => {
  // Prepare: the local runtime's dispatch over the real records, each function answering its own name
  const adapter = apiGatewayAdapter(
    apiFunctions().map((fn) => ({
      functionName: fn.name,
      routes: fn.routes,
      handler: async () => ({ statusCode: 200, body: fn.name }),
    })),
  );
  const server = createServer((request, response) => void adapter(request, response));
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', () => done()));
  localUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  stopLocal = () => new Promise<void>((done) => server.close(() => done()));
});

afterAll(async () => {
  await stopLocal?.();
});

describe('route records', () => {
  it('declare each method and path exactly once', () => {
    // Act
    const keys = allRoutes().map((route) => `${route.method} ${route.path}`);

    // Assess
    expect(keys.length).toBeGreaterThan(20);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('are the CDK route table: same routes, each integrated with its record function', () => {
    // Prepare
    const { template } = synthesize();
    const integrations = Object.fromEntries(
      Object.entries(template.findResources('AWS::ApiGatewayV2::Integration')).map(([id, r]) => [
        id,
        (r.Properties.IntegrationUri as { 'Fn::GetAtt': string[] })['Fn::GetAtt'][0],
      ]),
    );
    const functionOf = new Map(
      apiFunctions().map((fn) => [`Api${pascal(fn.name)}Function`, fn.name] as const),
    );

    // Act
    const routed = Object.values(template.findResources('AWS::ApiGatewayV2::Route')).map((r) => {
      const target = r.Properties.Target as { 'Fn::Join': [string, [string, { Ref: string }]] };
      const integratedWith = integrations[target['Fn::Join'][1][1].Ref]!;
      const fn = [...functionOf].find(([prefix]) => integratedWith.startsWith(prefix))?.[1];
      return `${r.Properties.RouteKey} -> ${fn}`;
    });

    // Assess
    expect(routed.sort()).toEqual(recordKeys().sort());
  });

  it('are the local dispatch: every record reaches its function', async () => {
    // Act
    const reached = await Promise.all(
      allRoutes().map(async (route) => {
        const response = await fetch(`${localUrl}${withParameters(route.path)}`, { method: route.method });
        return `${route.method} ${route.path} -> ${await response.text()}`;
      }),
    );

    // Assess
    expect(reached.sort()).toEqual(recordKeys().sort());
  });

  it('are the OpenAPI document: every record documented, nothing else', () => {
    // Act
    const document = buildOpenApi(allRoutes(), { version: 'test' });
    const documented = Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
      Object.keys(item as object).map((method) => `${method.toUpperCase()} ${path}`),
    );

    // Assess
    expect(documented.sort()).toEqual(
      allRoutes()
        .map((route) => `${route.method} ${route.path}`)
        .sort(),
    );
  });
});
