import { readFileSync } from 'node:fs';
import type { APIGatewayProxyEventV2, SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { handler as servicesHandler } from '../../functions/api/services.js';
import { handler as statusHandler } from '../../functions/api/status.js';
import { handler as serviceWorker } from '../../functions/workers/service-reconcile.js';
import { lambdaContext } from '../../infra/local/lambda-context.js';

const event = <T>(name: string): T =>
  JSON.parse(readFileSync(new URL(`../../events/${name}`, import.meta.url), 'utf8')) as T;

describe('Lambda entry points with the sample events', () => {
  it('answers the status route', async () => {
    // Act
    const result = await statusHandler(
      event<APIGatewayProxyEventV2>('api-get-status.json'),
      lambdaContext('status'),
    );

    // Assess
    expect(result.statusCode).toBe(200);
    expect(JSON.parse(result.body as string)).toMatchObject({ status: 'online' });
  });

  it('refuses a service body that is not JSON with 415 before touching the store', async () => {
    // Act
    const result = await servicesHandler(
      event<APIGatewayProxyEventV2>('api-post-service-text-plain.json'),
      lambdaContext('services'),
    );

    // Assess
    expect(result.statusCode).toBe(415);
    expect(JSON.parse(result.body as string)).toEqual({
      name: 'UnsupportedMediaTypeError',
      message: 'Content-Type "text/plain" is not supported here; send application/json',
    });
  });

  it('reports a malformed reconcile message and every later record of its FIFO group as failed', async () => {
    // Act
    const result = await serviceWorker(
      event<SQSEvent>('sqs-service-reconcile-malformed.json'),
      lambdaContext('worker'),
    );

    // Assess
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-1' }, { itemIdentifier: 'm-2' }] });
  });
});
