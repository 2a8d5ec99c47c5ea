import { z } from 'zod';

/** POST /api/v3/agent/provision (Edgelet's provisioning call). */
export const provisionBody = z.strictObject({
  // The reference takes the agent's architecture type here; fogbridge has no use for it.
  type: z.union([z.number().int().min(0).max(16), z.string().max(32)]),
  key: z.string().min(1).max(256),
});

/** PATCH /api/v3/agent/config/changes: the change counter the agent was shown. */
export const acknowledgementBody = z.strictObject({ lastUpdated: z.number().int().nonnegative() });

export type ProvisionBody = z.output<typeof provisionBody>;
export type AcknowledgementBody = z.output<typeof acknowledgementBody>;
