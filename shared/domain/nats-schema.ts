import { z } from 'zod';
import { dialledHost } from './hosts.js';
import { routerPort } from './router-schema.js';

/** A JetStream store size as the reference takes it (`10g`, `512 MB`, `1t`; digits alone are gigabytes). */
export const storeSize = z
  .string()
  .max(32, 'must be at most 32 characters')
  .refine((value) => /^[0-9]+\s*([mMgGtT][bB]?)?$/.test(value), {
    message: 'must be a size like 10g, 512m or 1t',
  });

/**
 * PUT /api/v3/nats/hub: the address leaves dial and the ports the operator's NATS listens on;
 * a missing port, or 0, takes the default (4222, 6222, 7422, 8883, 8222).
 */
export const putNatsHubBody = z.strictObject({
  host: dialledHost,
  serverPort: routerPort,
  clusterPort: routerPort,
  leafPort: routerPort,
  mqttPort: routerPort,
  httpPort: routerPort,
  jsStorageSize: storeSize.optional(),
  jsMemoryStoreSize: storeSize.optional(),
});

export type PutNatsHubBody = z.output<typeof putNatsHubBody>;
