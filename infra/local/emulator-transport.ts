import type { MessagePort } from 'node:worker_threads';
import type { HttpRequest } from '@smithy/types';

interface Answer {
  id: number;
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

const UTF8 = new TextEncoder();

/**
 * The DynamoDB and SQS clients' transport in the embedded runtime: each request the SDK has built and
 * signed goes to the emulator's thread over a message port and is answered there by the emulator's own
 * HTTP handling (dynalite's request handler, fauxqs's application; emulators-thread.ts), instead of over
 * a loopback socket. Everything above the transport (serialization, retries, middleware) is the plain
 * SDK's, as in AWS; what goes is the HTTP client's work on every call (a socket write, an HTTP parser),
 * which the API's thread otherwise spends on each store and queue call.
 */
export class MessagePortRequestHandler {
  private nextId = 0;
  private readonly waiting = new Map<number, (answer: Answer) => void>();

  constructor(private readonly port: MessagePort) {
    port.on('message', (answer: Answer) => {
      const settle = this.waiting.get(answer.id);
      this.waiting.delete(answer.id);
      if (this.waiting.size === 0) port.unref();
      settle?.(answer);
    });
    // An idle port keeps nothing alive; a request waiting for its answer does, as a socket would.
    port.unref();
  }

  async handle(request: HttpRequest): Promise<{ response: unknown }> {
    const id = this.nextId++;
    const query =
      request.query && Object.keys(request.query).length > 0
        ? new URLSearchParams(request.query as Record<string, string>).toString()
        : '';
    const answer = await new Promise<Answer>((resolve) => {
      if (this.waiting.size === 0) this.port.ref();
      this.waiting.set(id, resolve);
      this.port.postMessage({
        id,
        method: request.method,
        path: query ? `${request.path}?${query}` : request.path,
        headers: request.headers,
        body: bodyText(request.body),
      });
    });
    return {
      response: {
        statusCode: answer.statusCode,
        headers: answer.headers,
        body: UTF8.encode(answer.body),
      },
    };
  }

  updateHttpClientConfig(): void {}

  httpHandlerConfigs(): Record<string, never> {
    return {};
  }

  destroy(): void {
    this.port.close();
  }
}

/**
 * The request body as text. The SDK hands JSON bodies over as bytes that also answer string methods;
 * they are read as the bytes they are (`Buffer.from` would take their string form and warn).
 */
function bodyText(body: unknown): string {
  if (body instanceof Uint8Array)
    return Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  return typeof body === 'string' ? body : '';
}
