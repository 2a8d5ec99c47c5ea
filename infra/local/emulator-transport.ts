import type { MessagePort } from 'node:worker_threads';
import type { HttpRequest } from '@smithy/types';

/** What the emulator's thread sends back: its HTTP answer, the body as text. */
export interface EmulatorAnswer {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

type Answer = EmulatorAnswer & { id: number };

const UTF8 = new TextEncoder();

/**
 * The DynamoDB and SQS clients' transport in the embedded runtime: each request goes to the emulator's
 * thread over a message port and is answered there by the emulator's own HTTP handling (dynalite's
 * request handler, fauxqs's application; emulators-thread.ts), instead of over a loopback socket, so
 * neither side spends a socket write and an HTTP parser on each store and queue call. Requests the SDK
 * has built and signed come through `handle`; the item and message operations come through `operation`
 * as their JSON body alone (json-operations.ts).
 */
export class MessagePortRequestHandler {
  private nextId = 0;
  private readonly waiting = new Map<number, (answer: EmulatorAnswer) => void>();

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
    const query =
      request.query && Object.keys(request.query).length > 0
        ? new URLSearchParams(request.query as Record<string, string>).toString()
        : '';
    const answer = await this.ask({
      method: request.method,
      path: query ? `${request.path}?${query}` : request.path,
      headers: request.headers,
      body: bodyText(request.body),
    });
    return {
      response: {
        statusCode: answer.statusCode,
        headers: answer.headers,
        body: UTF8.encode(answer.body),
      },
    };
  }

  /**
   * One operation of the emulator's JSON protocol (`DynamoDB_20120810.GetItem`, `AmazonSQS.SendMessage`)
   * with its body as the protocol writes it: the emulator's thread adds the headers every such request
   * carries (json-operations.ts).
   */
  operation(target: string, body: string): Promise<EmulatorAnswer> {
    return this.ask({ target, body });
  }

  private ask(request: object): Promise<EmulatorAnswer> {
    const id = this.nextId++;
    return new Promise<EmulatorAnswer>((resolve) => {
      if (this.waiting.size === 0) this.port.ref();
      this.waiting.set(id, resolve);
      this.port.postMessage({ id, ...request });
    });
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
