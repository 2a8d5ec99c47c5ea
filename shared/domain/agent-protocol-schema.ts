import { z } from 'zod';
import { architectureType } from './agent-schema.js';
import { reservedMicroserviceUuid } from './placement.js';
import { refuseReserved } from './validation.js';

/**
 * The bodies Edgelet sends. Edgelet decodes nothing into structs and sends maps, so
 * these accept what it sends and report the rest as unknown, never refusing a field it adds later.
 */

/** POST /api/v3/agent/provision: `{key, type, engine[, flavor]}`; `type` is the architecture 0-4. */
export const provisionBody = z.strictObject({
  key: z.string().min(1).max(256),
  type: architectureType,
});

/**
 * PATCH /api/v3/agent/config/changes: the `lastUpdated` the agent was shown, sent back verbatim. Edgelet
 * reads and echoes it as a string (the decimal change counter); an older agent may send the number.
 */
export const acknowledgementBody = z.strictObject({
  lastUpdated: z.union([
    z
      .string()
      .regex(/^\d{1,15}$/, 'must be the change counter the agent was shown (decimal digits)')
      .transform(Number),
    z.number().int().nonnegative(),
  ]),
});

/** Deepest nesting a status or config document may have (Edgelet's are flat or one level deep). */
const MAX_DOCUMENT_DEPTH = 4;
const MAX_DOCUMENT_KEYS = 128;

/** Whether `value` is JSON at most `depth` levels deep (checked without recursion). */
function shallowJson(value: unknown, depth: number): boolean {
  const pending: [unknown, number][] = [[value, 0]];
  while (pending.length > 0) {
    const [current, level] = pending.pop()!;
    if (current === null || ['string', 'number', 'boolean'].includes(typeof current)) continue;
    if (typeof current !== 'object' || level >= depth) return false;
    for (const child of Object.values(current)) pending.push([child, level + 1]);
  }
  return true;
}

/**
 * A report an agent sends as a map of its own (PUT /agent/status, PATCH /agent/config): kept as sent,
 * within bounds; fogbridge reads the fields it knows when it shows the agent.
 */
export const agentDocument = z
  .record(z.string().max(128), z.unknown())
  .refine((document) => Object.keys(document).length <= MAX_DOCUMENT_KEYS, {
    message: `must have at most ${MAX_DOCUMENT_KEYS} fields`,
  })
  .refine((document) => shallowJson(document, MAX_DOCUMENT_DEPTH), {
    message: `must be JSON at most ${MAX_DOCUMENT_DEPTH} levels deep`,
  });

export type ProvisionBody = z.output<typeof provisionBody>;
export type AcknowledgementBody = z.output<typeof acknowledgementBody>;
export type AgentDocument = z.output<typeof agentDocument>;

/**
 * POST /api/v3/agent/controller/register: a system agent running a Controller container next to its
 * router tells the controller about it (Edgelet's `buildControllerRegisterBody`); retried until it
 * succeeds, so the same uuid updates the record.
 */
export const controllerRegisterBody = z.strictObject({
  uuid: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/, 'must be 1-64 letters, digits or dashes')
    .superRefine(refuseReserved(reservedMicroserviceUuid)),
  name: z.literal('controller').default('controller'),
  schedule: z.number().int().nonnegative().optional(),
  images: z
    .array(z.strictObject({ containerImage: z.string().min(1).max(512), archId: architectureType }))
    .min(1, 'must hold at least one image')
    .max(4, 'must hold at most one image per architecture'),
  registryId: z.number().int().positive(),
  ports: z
    .array(
      z.strictObject({
        internal: z.number().int().min(1).max(65535),
        external: z.number().int().min(1).max(65535),
        protocol: z.enum(['tcp', 'udp']).optional(),
      }),
    )
    .max(64)
    .optional(),
  volumeMappings: z
    .array(
      z.strictObject({
        hostDestination: z.string().min(1).max(4096),
        containerDestination: z.string().min(1).max(4096),
        accessMode: z.string().max(16),
        type: z.enum(['bind', 'volume', 'volumeMount']).optional(),
      }),
    )
    .max(64)
    .optional(),
  env: z
    .array(z.strictObject({ key: z.string().min(1).max(256), value: z.string().max(32_768) }))
    .max(256)
    .optional(),
  capAdd: z.array(z.string().min(1).max(64)).max(64).optional(),
  runtime: z.string().max(64).optional(),
  hostNetworkMode: z.boolean().optional(),
  config: z.string().max(65_536).optional(),
});
export type ControllerRegisterBody = z.output<typeof controllerRegisterBody>;
