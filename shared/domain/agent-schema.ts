import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { dialledHost } from './hosts.js';
import { lookalikeProblem } from './lookalikes.js';
import { storeSize } from './nats-schema.js';
import { reservedAgentUuid } from './placement.js';
import { tcpPort } from './service-schema.js';
import { parseBody, refuseReserved } from './validation.js';

export const ROUTER_MODES = ['none', 'edge', 'interior'] as const;

/** Router port defaults: messaging, inter-router, edge. */
export const DEFAULT_ROUTER_PORTS = {
  messagingPort: 5671,
  interRouterPort: 55671,
  edgeRouterPort: 45671,
} as const;

/**
 * The ports a router listens on, from a row that holds them: a port the row leaves unset (an edge
 * agent's inter-router and edge ports, a router registered without them) is the default one. Every
 * reader of a router's ports reads them through here.
 */
export function routerPortsOf(row: {
  messagingPort?: number | null;
  interRouterPort?: number | null;
  edgeRouterPort?: number | null;
}): { messagingPort: number; interRouterPort: number; edgeRouterPort: number } {
  return {
    messagingPort: row.messagingPort ?? DEFAULT_ROUTER_PORTS.messagingPort,
    interRouterPort: row.interRouterPort ?? DEFAULT_ROUTER_PORTS.interRouterPort,
    edgeRouterPort: row.edgeRouterPort ?? DEFAULT_ROUTER_PORTS.edgeRouterPort,
  };
}

const label = (max: number) =>
  z
    .string()
    .refine((value) => value.trim().length > 0, { message: 'must not be empty' })
    .refine((value) => value.length <= max, { message: `must be at most ${max} characters` })
    // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
    .refine((value) => !/[\u0000-\u001f\u007f]/.test(value), {
      message: 'must not contain control characters',
    });

/**
 * The architecture of an agent, as Edgelet and potctl number it: 0 unknown (potctl's "auto"), 1 amd64
 * (x86), 2 arm64, 3 riscv64, 4 arm. A microservice runs on an agent only with an image for its type.
 */
export const ARCHITECTURES = { unknown: 0, amd64: 1, arm64: 2, riscv64: 3, arm: 4 } as const;
export const architectureType = z.number().refine((n) => Number.isInteger(n) && n >= 0 && n <= 4, {
  message: 'must be an architecture type from 0 to 4 (1 amd64, 2 arm64, 3 riscv64, 4 arm; 0 unknown)',
});

/** An agent's name: what operators pick agents by, so it must not pass for another agent's name. */
const agentName = label(64).superRefine((value, context) => {
  const problem = lookalikeProblem(value);
  if (problem) context.addIssue({ code: 'custom', message: problem });
});

export const NATS_MODES = ['none', 'leaf', 'server'] as const;
export type NatsMode = (typeof NATS_MODES)[number];

const agentFields = {
  name: agentName,
  host: dialledHost.optional(),
  tags: z.array(label(253)).max(64, 'must hold at most 64 tags').optional(),
  routerMode: z.enum(ROUTER_MODES).optional(),
  messagingPort: tcpPort.optional(),
  interRouterPort: tcpPort.optional(),
  edgeRouterPort: tcpPort.optional(),
  upstreamRouters: z.array(label(64)).max(16, 'must hold at most 16 routers').optional(),
  isSystem: z.boolean().optional(),
  /** potctl's name for the architecture (0 = auto: the agent reports it when it provisions). */
  fogType: architectureType.optional(),
  /** The agent's NATS process: a cluster server, a leaf of its upstream servers, or none. */
  natsMode: z.enum(NATS_MODES).optional(),
  natsServerPort: tcpPort.optional(),
  natsLeafPort: tcpPort.optional(),
  natsClusterPort: tcpPort.optional(),
  natsMqttPort: tcpPort.optional(),
  natsHttpPort: tcpPort.optional(),
  jsStorageSize: storeSize.optional(),
  jsMemoryStoreSize: storeSize.optional(),
  /** NATS servers (agent names or uuids, or `default-nats-hub`) a leaf links to. */
  upstreamNatsServers: z.array(label(64)).max(16, 'must hold at most 16 servers').optional(),
};

/** What an agent uuid looks like: generated (32 hex digits) or imported by a tool. */
export const AGENT_UUID = /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/;

/** POST /api/v3/iofog. `uuid` lets a tool import an agent under the uuid it already has. */
export const createAgentBody = z.strictObject({
  ...agentFields,
  uuid: z
    .string()
    .refine((value) => AGENT_UUID.test(value), { message: 'must be 1-64 letters, digits or dashes' })
    .superRefine(refuseReserved(reservedAgentUuid))
    .optional(),
});

export const patchAgentBody = z.strictObject({
  ...agentFields,
  name: agentFields.name.optional(),
});

export type CreateAgentBody = z.output<typeof createAgentBody>;
export type PatchAgentBody = z.output<typeof patchAgentBody>;

export function parseCreateAgentBody(body: unknown): CreateAgentBody {
  return parseBody(createAgentBody, body).value;
}

/** An agent's uuid is its identity: a PATCH naming one is refused. */
export function rejectAgentUuidChange(body: unknown): void {
  if (body !== null && typeof body === 'object' && 'uuid' in body) {
    throw new ValidationError("Field 'uuid' cannot be changed");
  }
}

export function parsePatchAgentBody(body: unknown): PatchAgentBody {
  rejectAgentUuidChange(body);
  return parseBody(patchAgentBody, body).value;
}
