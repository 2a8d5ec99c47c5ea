import { z } from 'zod';
import { dialledHost } from './hosts.js';

/** 0 means "use the default" as well as a missing port (ingress paths may send 0). */
export const routerPort = z.preprocess(
  (value) =>
    value === 0 || value === '0' || value === null
      ? undefined
      : typeof value === 'string' && /^\d+$/.test(value)
        ? Number(value)
        : value,
  z
    .number()
    .refine((n) => Number.isInteger(n) && n >= 1 && n <= 65535, {
      message: 'must be an integer between 1 and 65535',
    })
    .optional(),
);

/** PUT /api/v3/router: the default router's address; missing ports take the defaults. */
export const putRouterBody = z.strictObject({
  host: dialledHost,
  messagingPort: routerPort,
  interRouterPort: routerPort,
  edgeRouterPort: routerPort,
});

export type PutRouterBody = z.output<typeof putRouterBody>;
