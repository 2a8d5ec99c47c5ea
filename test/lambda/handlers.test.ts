import { readFileSync } from 'node:fs';
import type { APIGatewayProxyEventV2, SQSEvent } from 'aws-lambda';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { lambdaContext } from '../../infra/local/lambda-context.js';

const event = <T>(name: string): T =>
  JSON.parse(readFileSync(new URL(`../../events/${name}`, import.meta.url), 'utf8')) as T;

let adminToken: string;
let handlers: {
  status: typeof import('../../functions/api/status.js').handler;
  services: typeof import('../../functions/api/services.js').handler;
  serviceWorker: typeof import('../../functions/workers/service-reconcile.js').handler;
};

beforeAll(async () => {
  // Prepare: an identity provider key, configured before the handlers read their configuration
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  process.env.AUTH_PUBLIC_KEY = JSON.stringify({ ...(await exportJWK(publicKey)), alg: 'ES256' });
  process.env.AUTH_ISSUER = 'https://issuer.example.com';
  process.env.AUTH_AUDIENCE = 'fogbridge';
  adminToken = await new SignJWT({ roles: ['admin'] })
    .setProtectedHeader({ alg: 'ES256' })
    .setIssuer('https://issuer.example.com')
    .setAudience('fogbridge')
    .setSubject('admin')
    .setExpirationTime('5m')
    .sign(privateKey);
  handlers = {
    status: (await import('../../functions/api/status.js')).handler,
    services: (await import('../../functions/api/services.js')).handler,
    serviceWorker: (await import('../../functions/workers/service-reconcile.js')).handler,
  };
});

describe('Lambda entry points with the sample events', () => {
  it('answers the status route without a token', async () => {
    // Act
    const result = await handlers.status(
      event<APIGatewayProxyEventV2>('api-get-status.json'),
      lambdaContext('status'),
    );

    // Assess
    expect(result.statusCode).toBe(200);
    expect(JSON.parse(result.body as string)).toMatchObject({ status: 'online' });
  });

  it('refuses a service body that is not JSON with 415 before touching the store', async () => {
    // Prepare
    const request = event<APIGatewayProxyEventV2>('api-post-service-text-plain.json');
    request.headers.authorization = `Bearer ${adminToken}`;

    // Act
    const result = await handlers.services(request, lambdaContext('services'));

    // Assess
    expect(result.statusCode).toBe(415);
    expect(JSON.parse(result.body as string)).toEqual({
      name: 'UnsupportedMediaTypeError',
      message: 'Content-Type "text/plain" is not supported here; send application/json',
    });
  });

  it('refuses the same request without a token with 401 before reading the body', async () => {
    // Act
    const result = await handlers.services(
      event<APIGatewayProxyEventV2>('api-post-service-text-plain.json'),
      lambdaContext('services'),
    );

    // Assess
    expect(result.statusCode).toBe(401);
    expect(JSON.parse(result.body as string)).toEqual({
      name: 'AuthenticationError',
      message: 'Missing Authorization header (expected "Bearer <token>")',
    });
  });

  it('reports a malformed reconcile message and every later record of its FIFO group as failed', async () => {
    // Act
    const result = await handlers.serviceWorker(
      event<SQSEvent>('sqs-service-reconcile-malformed.json'),
      lambdaContext('worker'),
    );

    // Assess
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-1' }, { itemIdentifier: 'm-2' }] });
  });
});
