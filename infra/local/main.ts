import './environment.js';
import { startLocalRuntime } from './runtime.js';

/** `npm start`: the embedded runtime on HOST:PORT with data under FOGBRIDGE_DATA_DIR. */
const port = Number(process.env.PORT ?? 51121);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`PORT=${JSON.stringify(process.env.PORT)} is not a TCP port`);
  process.exit(2);
}
const runtime = await startLocalRuntime({
  host: process.env.HOST ?? '127.0.0.1',
  port,
  dataDir: process.env.FOGBRIDGE_DATA_DIR ?? '.fogbridge',
  sweepIntervalMs: process.env.SWEEP_INTERVAL_MS ? Number(process.env.SWEEP_INTERVAL_MS) : undefined,
});
const dataDir = process.env.FOGBRIDGE_DATA_DIR ?? '.fogbridge';
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
