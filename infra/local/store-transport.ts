import type { MessagePort } from 'node:worker_threads';
import type { HttpRequest } from '@smithy/types';

interface Answer {
  id: number;
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * The DynamoDB client's transport in the embedded runtime: each request the SDK has built and signed
 * goes to the embedded DynamoDB's thread over a message port and is answered by dynalite's own request
 * handler there (emulators-thread.ts), instead of over a loopback socket. Everything above the transport
 * (serialization, retries, middleware) is the plain SDK's, as in AWS; what goes is the HTTP client and
 * parser work on both sides of every call, which the API's thread otherwise spends on each store call.
 */
export class MessagePortRequestHandler {
  private nextId = 0;
  private readonly waiting = new Map<number, (answer: Answer) => void>();

  constructor(private readonly port: MessagePort) {
    port.on('message', (answer: Answer) => {
      const settle = this.waiting.get(answer.id);
      this.waiting.delete(answer.id);
      settle?.(answer);
    });
    // Open requests keep nothing alive on their own: the runtime's server does.
    port.unref();
  }

  async handle(request: HttpRequest): Promise<{ response: unknown }> {
    const id = this.nextId++;
    const query = new URLSearchParams(request.query as Record<string, string>).toString();
    const answer = await new Promise<Answer>((resolve) => {
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
        body: new TextEncoder().encode(answer.body),
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
