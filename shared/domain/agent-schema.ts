import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { tcpPort } from './service-schema.js';
import { parseWith } from './validation.js';

export const ROUTER_MODES = ['none', 'edge', 'interior'] as const;

/** Router port defaults (seed 001): messaging, inter-router, edge. */
export const DEFAULT_ROUTER_PORTS = {
  messagingPort: 5671,
  interRouterPort: 55671,
  edgeRouterPort: 45671,
} as const;

const label = (max: number) =>
  z
    .string()
    .refine((value) => value.trim().length > 0, { message: 'must not be empty' })
    .refine((value) => value.length <= max, { message: `must be at most ${max} characters` })
    // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
    .refine((value) => !/[\u0000-\u001f\u007f]/.test(value), {
      message: 'must not contain control characters',
    });

const host = z.string().refine((value) => /^[A-Za-z0-9.:\-[\]]{1,253}$/.test(value), {
  message: 'must be a DNS name or an IP address',
});

/**
 * Fields the reference API accepts on agents that fogbridge has no use for: accepted and ignored so
 * existing clients (potctl, the console) keep working. Everything else unknown is rejected.
 */
export const IGNORED_AGENT_FIELDS = [
  'fogType',
  'natsMode',
  'natsServerPort',
  'natsLeafPort',
  'natsClusterPort',
  'natsMqttPort',
  'natsHttpPort',
  'jsStorageSize',
  'jsMemoryStoreSize',
  'upstreamNatsServers',
  'description',
  'latitude',
  'longitude',
  'dockerUrl',
  'diskLimit',
  'diskDirectory',
  'memoryLimit',
  'cpuLimit',
  'logLimit',
  'logDirectory',
  'logFileCount',
  'statusFrequency',
  'changeFrequency',
  'deviceScanFrequency',
  'bluetoothEnabled',
  'watchdogEnabled',
  'abstractedHardwareEnabled',
  'edgeGuardFrequency',
  'timeZone',
  'containerEngine',
  'deploymentType',
  'dockerPruningFrequency',
  'availableDiskThreshold',
  'isActivated',
] as const;

const ignored = Object.fromEntries(IGNORED_AGENT_FIELDS.map((field) => [field, z.unknown().optional()]));

const agentFields = {
  name: label(64),
  host: host.optional(),
  tags: z.array(label(253)).max(64, 'must hold at most 64 tags').optional(),
  routerMode: z.enum(ROUTER_MODES).optional(),
  messagingPort: tcpPort.optional(),
  interRouterPort: tcpPort.optional(),
  edgeRouterPort: tcpPort.optional(),
  upstreamRouters: z.array(label(64)).max(16, 'must hold at most 16 routers').optional(),
  isSystem: z.boolean().optional(),
};

/** POST /api/v3/iofog. `uuid` lets a tool import an agent under the uuid it already has. */
export const createAgentBody = z.strictObject({
  ...ignored,
  ...agentFields,
  uuid: z
    .string()
    .refine((value) => /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/.test(value), {
      message: 'must be 1-64 letters, digits or dashes',
    })
    .optional(),
});

export const patchAgentBody = z.strictObject({
  ...ignored,
  ...agentFields,
  name: agentFields.name.optional(),
});

type Stripped<T> = Omit<T, (typeof IGNORED_AGENT_FIELDS)[number]>;
export type CreateAgentBody = Stripped<z.output<typeof createAgentBody>>;
export type PatchAgentBody = Stripped<z.output<typeof patchAgentBody>>;

/** The body without the fields fogbridge accepts only for compatibility. */
export function stripIgnoredAgentFields<T extends Record<string, unknown>>(value: T): Stripped<T> {
  const copy: Record<string, unknown> = { ...value };
  for (const field of IGNORED_AGENT_FIELDS) delete copy[field];
  return copy as Stripped<T>;
}

export function parseCreateAgentBody(body: unknown): CreateAgentBody {
  return stripIgnoredAgentFields(parseWith(createAgentBody, body));
}

/** An agent's uuid is its identity: a PATCH naming one is refused. */
export function rejectAgentUuidChange(body: unknown): void {
  if (body !== null && typeof body === 'object' && 'uuid' in body) {
    throw new ValidationError("Field 'uuid' cannot be changed");
  }
}

export function parsePatchAgentBody(body: unknown): PatchAgentBody {
  rejectAgentUuidChange(body);
  return stripIgnoredAgentFields(parseWith(patchAgentBody, body));
}
