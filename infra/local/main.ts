// First, so that V8's optimization budget holds before any other module runs.
import './optimization-budget.js';
import { ConfigError, processConfig, quietSdkVersionWarning } from '../../shared/config.js';
import { startLocalRuntime } from './runtime.js';

/** `npm start`: the embedded runtime on HOST:PORT with data under FOGBRIDGE_DATA_DIR. */
quietSdkVersionWarning();
let config: ReturnType<typeof processConfig>;
try {
  config = processConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(error.message);
  process.exit(2);
}
const runtime = await startLocalRuntime({ config, workersThread: true });
const { dataDir } = config.local;
console.log(`fogbridge listening on ${runtime.url} (data in ${dataDir})`);
if (runtime.adminToken) {
  console.log(`admin token (also in ${dataDir}/admin.token; npm run token -- --role viewer mints others):`);
  console.log(runtime.adminToken);
}

let stopping = false;
const shutdown = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  console.log(`fogbridge stopping (${signal})`);
  await runtime.stop();
  process.exit(0);
};
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
