import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ListQueuesCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localHooks } from '../../infra/local/client-hooks.js';
import { type Config, loadConfig } from '../../shared/config.js';
import { type ContextHooks, createContext, disposeContext, runInContext } from '../../shared/context.js';
import { sqsClient } from '../../shared/queue/client.js';
import { documentClient } from '../../shared/store/client.js';

/** An endpoint that records each request's headers and answers every call with an empty JSON body. */
function recordingEndpoint() {
  const seen: IncomingHttpHeaders[] = [];
  const server: Server = createServer((request, response) => {
    seen.push(request.headers);
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
      response.end('{}');
    });
  });
  return { seen, server };
}

describe('request signing', () => {
  const { seen, server } = recordingEndpoint();
  let base: Config;

  beforeAll(async () => {
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', () => listening()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    base = {
      ...loadConfig({ AWS_ENDPOINT_URL_DYNAMODB: url, AWS_ENDPOINT_URL_SQS: url }),
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'example' },
    };
  });
  afterAll(() => new Promise<void>((closed) => server.close(() => closed())));

  async function headersOfOneCallEach(
    settings: Config,
    hooks?: ContextHooks,
  ): Promise<IncomingHttpHeaders[]> {
    seen.length = 0;
    const context = createContext(settings, hooks);
    await runInContext(context, async () => {
      await documentClient().send(new GetCommand({ TableName: 'fogbridge', Key: { PK: 'A', SK: 'B' } }));
      await sqsClient().send(new ListQueuesCommand({}));
    });
    disposeContext(context);
    return [...seen];
  }

  it("signs every DynamoDB and SQS request with SigV4 in a context without hooks (Lambda's)", async () => {
    // Act
    const headers = await headersOfOneCallEach(base);

    // Assess: a real signature is 64 hex digits over the signed headers, for this key and day
    expect(headers).toHaveLength(2);
    for (const [index, service] of ['dynamodb', 'sqs'].entries()) {
      expect(headers[index]!.authorization).toMatch(
        new RegExp(
          `^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/\\d{8}/${base.region}/${service}/aws4_request, SignedHeaders=[a-z0-9;-]+, Signature=[0-9a-f]{64}$`,
        ),
      );
    }
  });

  it("puts a well-formed placeholder on requests in the embedded runtime's context, with the scope and date its emulators read", async () => {
    // Prepare
    const hooks = localHooks({
      region: base.region,
      injectedLatency: { dynamodb: 0, sqs: 0 },
      measureOperations: false,
    });

    // Act
    const headers = await headersOfOneCallEach(base, hooks);

    // Assess: the credential scope names the region (fauxqs builds queue URLs and ARNs from it)
    expect(headers).toHaveLength(2);
    for (const [index, service] of ['dynamodb', 'sqs'].entries()) {
      const header = headers[index]!;
      expect(header['x-amz-date']).toMatch(/^\d{8}T\d{6}Z$/);
      expect(header.authorization).toBe(
        `AWS4-HMAC-SHA256 Credential=local/${String(header['x-amz-date']).slice(0, 8)}/${base.region}/${service}/aws4_request, SignedHeaders=host;x-amz-date, Signature=placeholder`,
      );
    }
  });
});
