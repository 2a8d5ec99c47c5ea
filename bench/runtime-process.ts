// First, so that V8's optimization budget holds before any other module runs.
import '../infra/local/optimization-budget.js';
import { createServer } from 'node:http';
import { startLocalRuntime } from '../infra/local/runtime.js';
import { injectedLatencyFrom } from '../infra/local/settings.js';
import { addUsage, resetUsage, usage } from '../infra/local/usage.js';
import { quietSdkVersionWarning } from '../shared/config.js';
import { config, runInContext } from '../shared/context.js';
import { sweep } from '../shared/reconcile/sweeper.js';

/**
 * The embedded runtime as the benchmark runs it: in a process of its own, so that the load generator
 * and the observers never share its event loop. Besides the runtime's API it serves, on 127.0.0.1 only,
 * what a benchmark needs from inside: the usage counters (read and reset) and one sweep on demand.
 * Started with its options as one JSON argument; prints `READY <json>` with its addresses.
 */
const options = JSON.parse(process.argv[2] ?? '{}') as {
  dataDir: string;
  workers: number;
  sweepIntervalMs: number;
  env: Record<string, string>;
  latency: string;
};

quietSdkVersionWarning();
const runtime = await startLocalRuntime({
  port: 0,
  dataDir: options.dataDir,
  workerConcurrency: options.workers,
  sweepIntervalMs: options.sweepIntervalMs,
  env: options.env,
  workersThread: true,
  measureOperations: true,
  injectedLatency: injectedLatencyFrom({ FOGBRIDGE_INJECT_LATENCY: options.latency }),
});
const workersThread = runtime.workersThread!;

const control = createServer((request, response) => {
  const reply = (body: unknown) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify(body));
  };
  const fail = (error: unknown) => {
    response.writeHead(500, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ message: (error as Error).message }));
  };
  const route = `${request.method} ${request.url}`;
  if (route === 'GET /usage') {
    workersThread.usage().then((workers) => reply(addUsage(usage, workers)), fail);
    return;
  }
  if (route === 'POST /usage/reset') {
    resetUsage();
    workersThread.resetUsage().then(() => reply({}), fail);
    return;
  }
  if (route === 'POST /sweep') {
    runInContext(runtime.context, () => sweep({ full: false })).then(reply, fail);
    return;
  }
  if (route === 'GET /settings') {
    return reply(runInContext(runtime.context, () => ({ driftCheckRouters: config().driftCheckRouters })));
  }
  response.writeHead(404).end();
});
await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve));
const address = control.address();
const controlUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

const stop = async () => {
  control.close();
  await runtime.stop();
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
console.log(
  `READY ${JSON.stringify({
    url: runtime.url,
    adminToken: runtime.adminToken,
    dynamodbEndpoint: runtime.dynamodbEndpoint,
    controlUrl,
  })}`,
);
