import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * The embedded DynamoDB (dynalite, its LevelDB store under `path`) and the embedded SQS (fauxqs) in a
 * worker thread of their own: the handlers' event loop no longer also serves the emulators' side of
 * every call, so the two run on two cores. The thread's code is plain JavaScript evaluated by the worker
 * (no TypeScript loader needed there); it loads both from this package's own dependencies.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const dynalite = require(workerData.dynalite);
const store = dynalite({ path: workerData.path, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
let queues;
store.listen(0, '127.0.0.1', async () => {
  try {
    const { startFauxqs } = await import(workerData.fauxqs);
    queues = await startFauxqs({ port: 0, host: '127.0.0.1', logger: false });
    parentPort.postMessage({ dynamodbPort: store.address().port, sqsEndpoint: queues.address });
  } catch (error) {
    parentPort.postMessage({ failed: String(error && error.message) });
  }
});
parentPort.on('message', async (message) => {
  if (message !== 'close') return;
  if (queues) await queues.stop();
  store.close(() => parentPort.postMessage({ closed: true }));
});
`;

export interface EmulatorsThread {
  dynamodbEndpoint: string;
  sqsEndpoint: string;
  stop(): Promise<void>;
}

export async function startEmulatorsThread(path: string): Promise<EmulatorsThread> {
  const worker = new Worker(THREAD_SOURCE, {
    eval: true,
    workerData: {
      path,
      dynalite: createRequire(import.meta.url).resolve('dynalite'),
      fauxqs: import.meta.resolve('fauxqs'),
    },
  });
  const started = await new Promise<{ dynamodbPort: number; sqsEndpoint: string }>((resolve, reject) => {
    worker.once('error', reject);
    worker.once('exit', (code) =>
      reject(new Error(`the emulators thread exited with ${code} before listening`)),
    );
    worker.once('message', (message: { dynamodbPort: number; sqsEndpoint: string } | { failed: string }) =>
      'failed' in message
        ? reject(new Error(`the emulators thread failed to start: ${message.failed}`))
        : resolve(message),
    );
  });
  worker.removeAllListeners('exit');
  worker.removeAllListeners('error');
  worker.on('error', (error) => process.stderr.write(`emulators thread error: ${error.message}\n`));
  return {
    dynamodbEndpoint: `http://127.0.0.1:${started.dynamodbPort}`,
    sqsEndpoint: started.sqsEndpoint,
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
