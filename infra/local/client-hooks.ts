import { SQSClient } from '@aws-sdk/client-sqs';
import type { HttpRequest, RequestSigningArguments } from '@smithy/types';
import type { Config } from '../../shared/config.js';
import type { AwsService, ContextHooks } from '../../shared/context.js';
import type { MessagePortRequestHandler } from './emulator-transport.js';
import { answerOperationsAsJson } from './json-operations.js';
import type { InjectedLatency } from './settings.js';
import { usageObserver } from './usage.js';

/** How the embedded runtime adapts a context (plain data, so a workers thread can build the same). */
export interface LocalHookSettings {
  region: string;
  injectedLatency: InjectedLatency;
  /** Measure every operation into this thread's usage counters (the benchmark reads them). */
  measureOperations: boolean;
}

/** How a context's clients reach an emulator over a message port (emulator-transport.ts), by service. */
export type EmulatorTransports = Partial<Record<'dynamodb' | 'sqs', () => MessagePortRequestHandler>>;

/**
 * The embedded runtime's context hooks: requests to its emulators carry a placeholder signature, each
 * call waits the injected latency first, and operations are measured when asked. With `transports` the
 * DynamoDB and SQS clients reach the embedded store and queues over message ports, their item and
 * message operations as JSON (json-operations.ts).
 */
export function localHooks(settings: LocalHookSettings, transports: EmulatorTransports = {}): ContextHooks {
  return {
    clientOptions: (service) => {
      const transport = service === 'dynamodb' || service === 'sqs' ? transports[service] : undefined;
      return {
        signer: placeholderSigner(settings.region, service),
        ...(transport ? { requestHandler: transport() } : {}),
      };
    },
    clientBuilt: (service, client) => {
      // The emulators never read the SDK's user agent, which the SDK otherwise composes for every call.
      (client as Stack).middlewareStack.remove('getUserAgentMiddleware');
      if (service === 'dynamodb' || service === 'sqs') answerOperationsAsJson(client, service);
      const delay = settings.injectedLatency[service];
      if (delay > 0) addLatency(client, delay);
    },
    ...(settings.measureOperations ? { observer: usageObserver() } : {}),
  };
}

type Stack = {
  middlewareStack: {
    remove(name: string): boolean;
    add(
      middleware: (next: (args: unknown) => Promise<unknown>) => (args: unknown) => Promise<unknown>,
      options: { step: 'initialize'; name: string },
    ): void;
  };
};

/** A model of the network between a Lambda and AWS: every call waits `delay` ms before it is sent. */
function addLatency(client: unknown, delay: number): void {
  (client as Stack).middlewareStack.add(
    (next) => async (args) => {
      await new Promise((resolve) => setTimeout(resolve, delay));
      return next(args);
    },
    { step: 'initialize', name: 'fogbridgeInjectedLatency' },
  );
}

/**
 * Signs a request for the embedded runtime's emulators with a placeholder: dynalite checks that an
 * Authorization header is well formed (algorithm, credential scope, signed headers, a date) but never
 * verifies the signature, and fauxqs reads only the scope's region (a queue's URL and ARN carry it).
 * Computing a real SigV4 signature hashes every body and chains four HMACs per call, CPU the embedded
 * runtime's handlers share two cores with; AWS clients (no emulator) always sign for real.
 */
export function placeholderSigner(region: string, service: AwsService) {
  return {
    sign: async (request: HttpRequest, options: RequestSigningArguments = {}): Promise<HttpRequest> => {
      // 20261202T180000Z: the basic ISO 8601 form SigV4 dates take.
      const date = new Date(options.signingDate ?? Date.now());
      const amzDate = `${date.toISOString().slice(0, 19).replace(/[-:]/g, '')}Z`;
      request.headers['x-amz-date'] = amzDate;
      request.headers.authorization =
        `AWS4-HMAC-SHA256 Credential=local/${amzDate.slice(0, 8)}/${region}/${service}/aws4_request, ` +
        'SignedHeaders=host;x-amz-date, Signature=placeholder';
      return request;
    },
  };
}

/**
 * The SQS client the embedded runtime's pollers receive and delete with, outside any context: the
 * queues' emulator over `transport`, signed with the placeholder, its message operations as JSON.
 */
export function pollerSqsClient(
  settings: Pick<Config, 'region' | 'credentials'> & { endpoint: string | undefined },
  transport: MessagePortRequestHandler,
): SQSClient {
  const sqs = new SQSClient({
    region: settings.region,
    ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
    ...(settings.credentials ? { credentials: settings.credentials } : {}),
    signer: placeholderSigner(settings.region, 'sqs'),
    useQueueUrlAsEndpoint: false,
    cacheMiddleware: true,
    requestHandler: transport,
  });
  answerOperationsAsJson(sqs, 'sqs');
  return sqs;
}
