import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { ARCHITECTURES } from './agent-schema.js';
import { natsName } from './nats-rules.js';
import { reservedMicroserviceUuid } from './placement.js';
import { type Parsed, parseBody, refuseReserved, show } from './validation.js';
import { loadYamlDocument } from './yaml.js';

/**
 * Applications and microservices: the registry `spec.resource` resolves against, and what an Edgelet
 * runs (an image per architecture from a container registry, and a config string).
 */
const registryName = z.string().refine((value) => /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(value), {
  message: 'must be a DNS label (lowercase letters, digits and dashes, at most 63 characters)',
});

/** An agent named by name or uuid; anything longer than either can be is refused before any lookup. */
const agentReference = z.string().min(1, 'must not be empty').max(64, 'must be at most 64 characters');

const description = z.string().max(1024, 'must be at most 1024 characters');

/**
 * `natsConfig` of an application (its NATS account, signed with the account rule `natsRule`) or of a
 * microservice (its user in the application's account, signed with the user rule `natsRule`).
 */
export const natsConfig = z.strictObject({
  natsAccess: z.boolean().optional(),
  natsRule: natsName.optional(),
});
export type NatsConfig = z.output<typeof natsConfig>;

/**
 * The NATS fields a `natsConfig` leaves (absent: as they were): access on or off, the rule as named or
 * as it was, and no rule without access.
 */
export function natsConfigAfter(
  nats: NatsConfig | undefined,
  existing: { natsAccess?: boolean; natsRule?: string } | undefined,
): { natsAccess: boolean | undefined; natsRule: string | undefined } {
  if (!nats) return { natsAccess: existing?.natsAccess, natsRule: existing?.natsRule };
  const natsAccess = nats.natsAccess ?? existing?.natsAccess ?? false;
  return { natsAccess, natsRule: natsAccess ? (nats.natsRule ?? existing?.natsRule) : undefined };
}

export const createApplicationBody = z.strictObject({
  name: registryName,
  description: description.optional(),
  isActivated: z.boolean().optional(),
  natsConfig: natsConfig.optional(),
});

/** PATCH /api/v3/application/{name}: potctl starts and stops an application this way. */
export const patchApplicationBody = z.strictObject({
  name: registryName.optional(),
  description: description.optional(),
  isActivated: z.boolean().optional(),
  natsConfig: natsConfig.optional(),
});

const microserviceUuid = z
  .string()
  .refine((value) => /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/.test(value), {
    message: 'must be 1-64 letters, digits or dashes',
  })
  .superRefine(refuseReserved(reservedMicroserviceUuid));

/** An image reference as a container engine pulls it: no spaces or control characters. */
const containerImage = z.string().refine((value) => /^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,511}$/.test(value), {
  message: 'must be a container image reference (e.g. ghcr.io/datasance/router:3.9.0)',
});

/** `images` as the reference takes it: one image per architecture (`fogTypeId` 1-4). */
export const microserviceImages = z
  .array(
    z.strictObject({
      containerImage,
      fogTypeId: z.number().refine((n) => Number.isInteger(n) && n >= 1 && n <= 4, {
        message: 'must be 1 (amd64), 2 (arm64), 3 (riscv64) or 4 (arm)',
      }),
    }),
  )
  .max(4, 'must hold at most one image per architecture')
  .refine((images) => new Set(images.map((image) => image.fogTypeId)).size === images.length, {
    message: 'must hold at most one image per architecture',
  });

export const registryId = z.number().refine((n) => Number.isInteger(n) && n >= 1, {
  message: 'must be the id of a registry (an integer from 1)',
});

/** Largest microservice config kept (the JSON string an Edgelet hands the container). */
const MAX_CONFIG_BYTES = 32 * 1024;

/** `config`: a JSON string, as the reference stores it; an object is accepted and stored as its JSON. */
export const microserviceConfig = z
  .union([z.string(), z.record(z.string(), z.unknown())])
  .transform((value) => (typeof value === 'string' ? value : JSON.stringify(value)))
  .refine((text) => Buffer.byteLength(text) <= MAX_CONFIG_BYTES, {
    message: `must be at most ${MAX_CONFIG_BYTES} bytes`,
  })
  .refine(
    (text) => {
      try {
        const value: unknown = JSON.parse(text);
        return value !== null && typeof value === 'object' && !Array.isArray(value);
      } catch {
        return false;
      }
    },
    { message: 'must be a JSON object (or its JSON text)' },
  );

const runtimeFields = {
  images: microserviceImages.optional(),
  registryId: registryId.optional(),
  config: microserviceConfig.optional(),
  hostNetworkMode: z.boolean().optional(),
  natsConfig: natsConfig.optional(),
};

export const createMicroserviceBody = z.strictObject({
  name: registryName,
  application: registryName,
  agentName: agentReference.optional(),
  iofogUuid: agentReference.optional(),
  ...runtimeFields,
  /** Lets a tool import a microservice under the uuid it already has. */
  uuid: microserviceUuid.optional(),
});

export const patchMicroserviceBody = z.strictObject({
  name: registryName.optional(),
  agentName: agentReference.optional(),
  iofogUuid: agentReference.optional(),
  ...runtimeFields,
});

export type CreateApplicationBody = z.output<typeof createApplicationBody>;
export type PatchApplicationBody = z.output<typeof patchApplicationBody>;
export type CreateMicroserviceBody = z.output<typeof createMicroserviceBody>;
export type PatchMicroserviceBody = z.output<typeof patchMicroserviceBody>;

export function parseCreateApplicationBody(body: unknown): CreateApplicationBody {
  return parseBody(createApplicationBody, body).value;
}

export function parseCreateMicroserviceBody(body: unknown): CreateMicroserviceBody {
  return parseBody(createMicroserviceBody, body).value;
}

export function parsePatchMicroserviceBody(body: unknown): PatchMicroserviceBody {
  return parseBody(patchMicroserviceBody, body).value;
}

// --- The YAML kinds potctl deploys: Application and Microservice -----------------------------------

/**
 * `spec.images` of a YAML microservice, as potctl writes it: `x86` and `arm` images and the registry
 * (`remote` = 1, `local` = 2, or a registry id).
 */
const yamlImages = z.strictObject({
  x86: containerImage.optional(),
  arm: containerImage.optional(),
  registry: z.union([z.enum(['remote', 'local']), registryId]).optional(),
});

/** The parts of a YAML microservice fogbridge models; everything else is reported and ignored. */
const yamlMicroserviceSpec = {
  agent: z.strictObject({ name: z.string().min(1).max(64) }),
  images: yamlImages.optional(),
  container: z.strictObject({ rootHostAccess: z.boolean().optional() }).optional(),
  config: z.record(z.string(), z.unknown()).optional(),
  natsConfig: natsConfig.optional(),
};

export const microserviceDocument = z.strictObject({
  apiVersion: z.unknown().optional(),
  kind: z.unknown(),
  metadata: z.strictObject({
    /** `<application>/<name>`, or the name with `spec.application`. */
    name: z.string().min(1).max(128),
    namespace: z.string().optional(),
  }),
  spec: z.strictObject({ ...yamlMicroserviceSpec, application: registryName.optional() }),
});

export const applicationDocument = z.strictObject({
  apiVersion: z.unknown().optional(),
  kind: z.unknown(),
  metadata: z.strictObject({ name: registryName, namespace: z.string().optional() }),
  spec: z.strictObject({
    description: description.optional(),
    isActivated: z.boolean().optional(),
    natsConfig: natsConfig.optional(),
    microservices: z
      .array(z.strictObject({ name: registryName, ...yamlMicroserviceSpec }))
      .max(64, 'must hold at most 64 microservices')
      .optional(),
  }),
});

/** A microservice as a YAML document states it, in the API's terms. */
export interface MicroserviceDeclaration {
  name: string;
  application: string;
  agentName: string;
  images: { containerImage: string; fogTypeId: number }[];
  registryId: number;
  config: string | undefined;
  hostNetworkMode: boolean;
  natsConfig: NatsConfig | undefined;
}

export interface ApplicationDeclaration {
  name: string;
  description: string | undefined;
  isActivated: boolean;
  natsConfig: NatsConfig | undefined;
  microservices: Omit<MicroserviceDeclaration, 'application'>[];
}

type YamlMicroservice = z.output<z.ZodObject<typeof yamlMicroserviceSpec>>;

function fromYaml(spec: YamlMicroservice): Omit<MicroserviceDeclaration, 'name' | 'application'> {
  const images = [
    ...(spec.images?.x86 ? [{ containerImage: spec.images.x86, fogTypeId: ARCHITECTURES.amd64 }] : []),
    ...(spec.images?.arm ? [{ containerImage: spec.images.arm, fogTypeId: ARCHITECTURES.arm64 }] : []),
  ];
  const registry = spec.images?.registry;
  return {
    agentName: spec.agent.name,
    images,
    registryId: registry === 'local' ? 2 : registry === 'remote' || registry === undefined ? 1 : registry,
    config: spec.config === undefined ? undefined : JSON.stringify(spec.config),
    hostNetworkMode: spec.container?.rootHostAccess ?? false,
    natsConfig: spec.natsConfig,
  };
}

/** A `kind: Microservice` document (potctl's deploy): which microservice, where, with which images. */
export function parseMicroserviceDocument(source: string): Parsed<MicroserviceDeclaration> {
  const { value, unknownFields } = parseBody(microserviceDocument, loadYamlDocument(source, 'Microservice'));
  const parts = value.metadata.name.split('/');
  if (parts.length > 2) {
    throw new ValidationError(
      `Field 'metadata.name' must be <application>/<name> or <name>, got ${show(value.metadata.name)}`,
    );
  }
  const [application, name] = parts.length === 2 ? parts : [value.spec.application, parts[0]];
  if (!application) {
    throw new ValidationError(
      "Required field 'spec.application' is missing (or write metadata.name as <application>/<name>)",
    );
  }
  const checked = parseBody(
    z.object({ application: registryName, name: registryName }),
    { application, name },
    'metadata.name',
  ).value;
  return { value: { ...checked, ...fromYaml(value.spec) }, unknownFields };
}

/** A `kind: Application` document: the application and its microservices. */
export function parseApplicationDocument(source: string): Parsed<ApplicationDeclaration> {
  const { value, unknownFields } = parseBody(applicationDocument, loadYamlDocument(source, 'Application'));
  const microservices = (value.spec.microservices ?? []).map((spec) => ({
    name: spec.name,
    ...fromYaml(spec),
  }));
  const names = microservices.map((microservice) => microservice.name);
  const repeated = names.find((name, index) => names.indexOf(name) !== index);
  if (repeated) {
    throw new ValidationError(`Field 'spec.microservices' names microservice ${show(repeated)} twice`);
  }
  return {
    value: {
      name: value.metadata.name,
      description: value.spec.description,
      isActivated: value.spec.isActivated ?? true,
      natsConfig: value.spec.natsConfig,
      microservices,
    },
    unknownFields,
  };
}
