import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * dynalite (with its LevelDB store under `path`) in a worker thread of its own: the handlers' event loop
 * no longer also serves the store's side of every call, so the two run on two cores. The thread's code
 * is plain JavaScript evaluated by the worker (no TypeScript loader needed there); it loads dynalite
 * from this package's own dependency.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const dynalite = require(workerData.dynalite);
const server = dynalite({ path: workerData.path, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }));
parentPort.on('message', (message) => {
  if (message === 'close') server.close(() => parentPort.postMessage({ closed: true }));
});
`;

export interface DynaliteThread {
  endpoint: string;
  stop(): Promise<void>;
}

export async function startDynaliteThread(path: string): Promise<DynaliteThread> {
  const worker = new Worker(THREAD_SOURCE, {
    eval: true,
    workerData: { path, dynalite: createRequire(import.meta.url).resolve('dynalite') },
  });
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('error', reject);
    worker.once('exit', (code) =>
      reject(new Error(`the dynalite thread exited with ${code} before listening`)),
    );
    worker.once('message', (message: { port: number }) => resolve(message.port));
  });
  worker.removeAllListeners('exit');
  worker.removeAllListeners('error');
  worker.on('error', (error) => process.stderr.write(`dynalite thread error: ${error.message}\n`));
  return {
    endpoint: `http://127.0.0.1:${port}`,
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
