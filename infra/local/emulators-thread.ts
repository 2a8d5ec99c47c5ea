import { createRequire } from 'node:module';
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads';

/**
 * The embedded DynamoDB (dynalite, its LevelDB store under `path`) and the embedded SQS (fauxqs), each
 * in a worker thread of its own, each reached over HTTP at its endpoint or over a message port (see
 * emulator-transport.ts): the handlers' event loop no longer also serves the emulators' side of
 * every call, and the store and the queues do not wait on each other. Each thread's code is plain
 * JavaScript evaluated by the worker (no TypeScript loader needed there); it loads its emulator from
 * this package's own dependencies.
 */
/**
 * The headers of every request of an emulator's JSON protocol that comes as its target and body alone
 * (emulator-transport.ts `operation`): the content type, and a signature of the embedded runtime's
 * placeholder form (client-hooks.ts), dated when the thread starts.
 */
const JSON_PROTOCOL_HEADERS = `
function jsonProtocolHeaders(service, region) {
  const date = new Date().toISOString().replace(/[-:]|\\.\\d+/g, '');
  return {
    'content-type': 'application/x-amz-json-1.0',
    'x-amz-date': date,
    authorization:
      'AWS4-HMAC-SHA256 Credential=local/' + date.slice(0, 8) + '/' + region + '/' + service + '/aws4_request, ' +
      'SignedHeaders=host;x-amz-date, Signature=placeholder',
  };
}
`;

const DYNALITE_SOURCE = `
const { EventEmitter } = require('node:events');
const { parentPort, workerData } = require('node:worker_threads');
${JSON_PROTOCOL_HEADERS}
const HEADERS = jsonProtocolHeaders('dynamodb', workerData.region);
const dynalite = require(workerData.dynalite);
const store = dynalite({ path: workerData.path, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
const handle = store.listeners('request')[0];
store.listen(0, '127.0.0.1', () => parentPort.postMessage({ endpoint: 'http://127.0.0.1:' + store.address().port }));

// A request that came over a message port, handed to dynalite's own request handler as if it had come
// over HTTP: the same headers, body and answer, without a socket or an HTTP parser on either side.
function serve(port, { id, target, method = 'POST', path = '/', headers = { ...HEADERS, 'x-amz-target': target }, body }) {
  const request = Object.assign(new EventEmitter(), { method, url: path, headers });
  const answer = { statusCode: 200, headers: {} };
  const response = {
    set statusCode(code) { answer.statusCode = code; },
    get statusCode() { return answer.statusCode; },
    setHeader(name, value) { answer.headers[name.toLowerCase()] = String(value); },
    end(text) { port.postMessage({ id, statusCode: answer.statusCode, headers: answer.headers, body: text ?? '' }); },
  };
  handle(request, response);
  if (body) request.emit('data', Buffer.from(body));
  request.emit('end');
}
parentPort.on('message', (message) => {
  if (message === 'close') store.close(() => parentPort.postMessage({ closed: true }));
  else if (message && message.connect) message.connect.on('message', (request) => serve(message.connect, request));
});
`;

const FAUXQS_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
${JSON_PROTOCOL_HEADERS}
const HEADERS = jsonProtocolHeaders('sqs', workerData.region);
let app;
import(workerData.fauxqs)
  .then(async ({ buildApp }) => {
    app = buildApp({ logger: false });
    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    parentPort.postMessage({ endpoint: address });
  })
  .catch((error) => parentPort.postMessage({ failed: String(error && error.message) }));

// A request that came over a message port, given to fauxqs's own HTTP application as Fastify injects
// one: the same routes, headers, body and answer, without a socket or an HTTP client on the other side.
function serve(port, { id, target, method = 'POST', path = '/', headers = { ...HEADERS, 'x-amz-target': target }, body }) {
  app.inject({ method, url: path, headers, payload: body }).then(
    (answer) => port.postMessage({ id, statusCode: answer.statusCode, headers: plain(answer.headers), body: answer.body }),
    (error) => port.postMessage({ id, statusCode: 500, headers: {}, body: String(error && error.message) }),
  );
}
const plain = (headers) =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(',') : String(value)]));
parentPort.on('message', async (message) => {
  if (message && message.connect) return message.connect.on('message', (request) => serve(message.connect, request));
  if (message !== 'close') return;
  if (app) await app.close();
  parentPort.postMessage({ closed: true });
});
`;

export interface EmulatorsThread {
  dynamodbEndpoint: string;
  sqsEndpoint: string;
  /** A new message port to the embedded DynamoDB (see emulator-transport.ts), for one thread's clients. */
  connectDynamodb(): MessagePort;
  /** A new message port to the embedded SQS, likewise. */
  connectSqs(): MessagePort;
  stop(): Promise<void>;
}

/** The emulators' threads; `region` is the one the runtime's clients sign for. */
export async function startEmulatorsThread(path: string, region: string): Promise<EmulatorsThread> {
  const [store, queues] = await Promise.all([
    startThread('dynalite', DYNALITE_SOURCE, {
      path,
      region,
      dynalite: createRequire(import.meta.url).resolve('dynalite'),
    }),
    startThread('fauxqs', FAUXQS_SOURCE, { fauxqs: import.meta.resolve('fauxqs'), region }),
  ]);
  return {
    dynamodbEndpoint: store.endpoint,
    sqsEndpoint: queues.endpoint,
    connectDynamodb: () => connect(store.worker),
    connectSqs: () => connect(queues.worker),
    stop: async () => {
      await Promise.all([store.stop(), queues.stop()]);
    },
  };
}

/** A message channel to an emulator's thread: one end there, the other returned. */
function connect(worker: Worker): MessagePort {
  const { port1, port2 } = new MessageChannel();
  worker.postMessage({ connect: port2 }, [port2]);
  return port1;
}

async function startThread(
  name: string,
  source: string,
  workerData: Record<string, string>,
): Promise<{ endpoint: string; worker: Worker; stop: () => Promise<void> }> {
  const worker = new Worker(source, { eval: true, workerData });
  const endpoint = await new Promise<string>((resolve, reject) => {
    worker.once('error', reject);
    worker.once('exit', (code) =>
      reject(new Error(`the ${name} thread exited with ${code} before listening`)),
    );
    worker.once('message', (message: { endpoint: string } | { failed: string }) =>
      'failed' in message
        ? reject(new Error(`the ${name} thread failed to start: ${message.failed}`))
        : resolve(message.endpoint),
    );
  });
  worker.removeAllListeners('exit');
  worker.removeAllListeners('error');
  worker.on('error', (error) => process.stderr.write(`${name} thread error: ${error.message}\n`));
  return {
    endpoint,
    worker,
    stop: async () => {
      await new Promise<void>((resolve) => {
        worker.once('message', () => resolve());
        worker.once('exit', () => resolve());
        worker.postMessage('close');
      });
      await worker.terminate();
    },
  };
}
