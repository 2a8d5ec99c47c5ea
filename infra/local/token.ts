import { parseArgs } from 'node:util';
import { processConfig } from '../../shared/config.js';
import { mintUserToken } from './auth.js';

/** `npm run token -- --role viewer [--ttl 3600] [--subject alice]`: mints a token for the local runtime. */
const { values } = parseArgs({
  options: {
    role: { type: 'string', default: 'admin' },
    ttl: { type: 'string', default: String(7 * 24 * 3600) },
    subject: { type: 'string' },
  },
});
if (values.role !== 'admin' && values.role !== 'viewer') {
  console.error(`--role must be admin or viewer, got ${JSON.stringify(values.role)}`);
  process.exit(2);
}
const ttlSeconds = Number(values.ttl);
if (!Number.isInteger(ttlSeconds) || ttlSeconds <= 0) {
  console.error(`--ttl must be a positive number of seconds, got ${JSON.stringify(values.ttl)}`);
  process.exit(2);
}
const { local, auth } = processConfig();
if (ttlSeconds > auth.userTokenMaxLifetimeSeconds) {
  console.error(
    `--ttl ${ttlSeconds} is longer than USER_TOKEN_MAX_LIFETIME_SECONDS (${auth.userTokenMaxLifetimeSeconds}); the runtime would refuse the token`,
  );
  process.exit(2);
}
const { dataDir } = local;
console.log(await mintUserToken(dataDir, { role: values.role, ttlSeconds, subject: values.subject }));
