import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * The embedded DynamoDB (dynalite, its LevelDB store under `path`) and the embedded SQS (fauxqs), each
 * in a worker thread of its own: the handlers' event loop no longer also serves the emulators' side of
 * every call, and the store and the queues do not wait on each other. Each thread's code is plain
 * JavaScript evaluated by the worker (no TypeScript loader needed there); it loads its emulator from
 * this package's own dependencies.
 */
const DYNALITE_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const dynalite = require(workerData.dynalite);
const store = dynalite({ path: workerData.path, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
store.listen(0, '127.0.0.1', () => parentPort.postMessage({ endpoint: 'http://127.0.0.1:' + store.address().port }));
parentPort.on('message', (message) => {
  if (message === 'close') store.close(() => parentPort.postMessage({ closed: true }));
});
`;

const FAUXQS_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
let queues;
import(workerData.fauxqs)
  .then(({ startFauxqs }) => startFauxqs({ port: 0, host: '127.0.0.1', logger: false }))
  .then((started) => {
    queues = started;
    parentPort.postMessage({ endpoint: started.address });
  })
  .catch((error) => parentPort.postMessage({ failed: String(error && error.message) }));
parentPort.on('message', async (message) => {
  if (message !== 'close') return;
  if (queues) await queues.stop();
  parentPort.postMessage({ closed: true });
});
`;

export interface EmulatorsThread {
  dynamodbEndpoint: string;
  sqsEndpoint: string;
  stop(): Promise<void>;
}

export async function startEmulatorsThread(path: string): Promise<EmulatorsThread> {
  const [store, queues] = await Promise.all([
    startThread('dynalite', DYNALITE_SOURCE, {
      path,
      dynalite: createRequire(import.meta.url).resolve('dynalite'),
    }),
    startThread('fauxqs', FAUXQS_SOURCE, { fauxqs: import.meta.resolve('fauxqs') }),
  ]);
  return {
    dynamodbEndpoint: store.endpoint,
    sqsEndpoint: queues.endpoint,
    stop: async () => {
      await Promise.all([store.stop(), queues.stop()]);
    },
  };
}

async function startThread(
  name: string,
  source: string,
  workerData: Record<string, string>,
): Promise<{ endpoint: string; stop: () => Promise<void> }> {
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
