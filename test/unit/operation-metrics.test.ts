import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../shared/config.js';
import { createContext, disposeContext, runInContext } from '../../shared/context.js';
import { cloudWatchObserver } from '../../shared/metrics/cloudwatch.js';
import { countEvent, observeOperation } from '../../shared/metrics/operations.js';
import { sqsClient } from '../../shared/queue/client.js';
import { documentClient } from '../../shared/store/client.js';

/**
 * What Lambda publishes of its operations: one CloudWatch embedded-metric-format line per operation,
 * under dimension `operation`, with the calls, capacity and messages the clients saw inside it.
 */

/** DynamoDB and SQS as far as one GetItem and one SendMessageBatch go. */
function awsLikeEndpoint(): Server {
  return createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => {
      body += chunk;
    });
    request.on('end', () => {
      const target = String(request.headers['x-amz-target'] ?? '');
      response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
      if (target.startsWith('DynamoDB')) {
        const asked = JSON.parse(body) as { ReturnConsumedCapacity?: string };
        response.end(
          JSON.stringify(
            asked.ReturnConsumedCapacity === 'TOTAL'
              ? { ConsumedCapacity: { TableName: 'fogbridge', CapacityUnits: 0.5 } }
              : {},
          ),
        );
      } else {
        response.end(JSON.stringify({ Successful: [], Failed: [] }));
      }
    });
  });
}

describe('operation metrics in Lambda', () => {
  const server = awsLikeEndpoint();
  let url = '';
  const lines: string[] = [];

  beforeAll(async () => {
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', () => listening()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((closed) => server.close(() => closed())));
  afterEach(() => {
    vi.restoreAllMocks();
    lines.length = 0;
  });

  it('publishes each operation as one metrics line: calls and those in sequence, read units, messages and events, by operation', async () => {
    // Prepare: Lambda's context as METRICS_NAMESPACE sets it up, standard output captured
    const config = {
      ...loadConfig({
        AWS_ENDPOINT_URL_DYNAMODB: url,
        AWS_ENDPOINT_URL_SQS: url,
        METRICS_NAMESPACE: 'fogbridge-test',
      }),
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'example' },
    };
    const context = createContext(config, { observer: cloudWatchObserver(config.metricsNamespace!) });
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      lines.push(String(chunk));
      return true;
    });

    // Act: two reads side by side, then one batch of two messages and a hub write inside one operation
    await runInContext(context, () =>
      observeOperation('service reconcile', async () => {
        await Promise.all(
          ['B', 'C'].map((SK) =>
            documentClient().send(new GetCommand({ TableName: 'fogbridge', Key: { PK: 'A', SK } })),
          ),
        );
        await sqsClient().send(
          new SendMessageBatchCommand({
            QueueUrl: `${url}/000000000000/fog.fifo`,
            Entries: [
              { Id: '1', MessageBody: '{}', MessageGroupId: 'a', MessageDeduplicationId: '1' },
              { Id: '2', MessageBody: '{}', MessageGroupId: 'b', MessageDeduplicationId: '2' },
            ],
          }),
        );
        countEvent('hub write');
      }),
    );
    disposeContext(context);
    vi.restoreAllMocks();

    // Assess
    const published = lines
      .filter((line) => line.includes('CloudWatchMetrics'))
      .map((line) => JSON.parse(line));
    expect(published).toHaveLength(1);
    const [emf] = published;
    expect(emf._aws.CloudWatchMetrics[0].Namespace).toBe('fogbridge-test');
    expect(emf._aws.CloudWatchMetrics[0].Dimensions[0]).toEqual(expect.arrayContaining(['operation']));
    expect(emf).toMatchObject({
      operation: 'service reconcile',
      Calls: 3,
      SequentialCalls: 2,
      ReadUnits: 1,
      WriteUnits: 0,
      MessagesSent: 2,
      HubWrites: 1,
    });
    expect(emf.Duration).toBeGreaterThan(0);
  });

  it('measures nothing and asks DynamoDB for no capacity figures without a namespace', async () => {
    // Prepare
    const config = loadConfig({ AWS_ENDPOINT_URL_DYNAMODB: url, METRICS_NAMESPACE: '' });
    const context = createContext({ ...config, credentials: { accessKeyId: 'A', secretAccessKey: 'B' } });
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      lines.push(String(chunk));
      return true;
    });

    // Act
    await runInContext(context, () =>
      observeOperation('GET /api/v3/services', () =>
        documentClient().send(new GetCommand({ TableName: 'fogbridge', Key: { PK: 'A', SK: 'B' } })),
      ),
    );
    disposeContext(context);
    vi.restoreAllMocks();

    // Assess
    expect(config.metricsNamespace).toBeUndefined();
    expect(lines.filter((line) => line.includes('CloudWatchMetrics'))).toEqual([]);
  });
});
