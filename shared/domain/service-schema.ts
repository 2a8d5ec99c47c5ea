import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { DEFAULT_ROUTER } from './placement.js';
import {
  DNS_LABEL,
  DNS_LABEL_MAX,
  K8S_SERVICE_TYPES,
  RESERVED_SERVICE_NAMES,
  SERVICE_TYPES,
  type ServiceSpec,
} from './service.js';
import { type Parsed, parseBody, show } from './validation.js';
import { loadYamlDocument } from './yaml.js';

/** Numbers may arrive as numeric strings from older clients; anything else is reported as sent. */
const numericString = (value: unknown) =>
  typeof value === 'string' && /^\d{1,6}$/.test(value) ? Number(value) : value;

export const tcpPort = z.preprocess(
  numericString,
  z.number().refine((n) => Number.isInteger(n) && n >= 1 && n <= 65535, {
    message: 'must be an integer between 1 and 65535',
  }),
);

export const serviceName = z
  .string()
  .refine((name) => name.length <= DNS_LABEL_MAX && DNS_LABEL.test(name), {
    message: `must be a DNS label (${DNS_LABEL.source}, at most ${DNS_LABEL_MAX} characters)`,
  })
  .refine((name) => !(RESERVED_SERVICE_NAMES as readonly string[]).includes(name), {
    message: `is a reserved name (${RESERVED_SERVICE_NAMES.join(', ')})`,
  });

/** Printable text without control characters; bounded so a tag cannot carry a payload. */
const text = (max: number) =>
  z
    .string()
    .refine((value) => value.trim().length > 0, { message: 'must not be empty' })
    .refine((value) => value.length <= max, { message: `must be at most ${max} characters` })
    // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
    .refine((value) => !/[\u0000-\u001f\u007f]/.test(value), {
      message: 'must not contain control characters',
    });

export const serviceTags = z.array(text(253)).max(64, 'must hold at most 64 tags');

const specFields = {
  type: z.enum(SERVICE_TYPES),
  resource: text(253),
  targetPort: tcpPort,
  servicePort: tcpPort.optional(),
  k8sType: z.enum(K8S_SERVICE_TYPES).optional(),
  defaultBridge: text(253).optional(),
};

/** POST /api/v3/services */
export const createServiceBody = z.strictObject({
  name: serviceName,
  tags: serviceTags.optional(),
  ...specFields,
});

/** PATCH /api/v3/services/{name}: every field optional; absent fields keep their stored values. */
export const patchServiceBody = z.strictObject({
  name: serviceName.optional(),
  tags: serviceTags.optional(),
  type: specFields.type.optional(),
  resource: specFields.resource.optional(),
  targetPort: tcpPort.optional(),
  servicePort: specFields.servicePort,
  k8sType: specFields.k8sType,
  defaultBridge: specFields.defaultBridge,
  /** The Go SDK's `ServiceUpdateRequest` spells defaultBridge this way (potctl re-deploys send it). */
  defaultBridgePort: specFields.defaultBridge,
});

export type CreateServiceBody = z.output<typeof createServiceBody>;
export type PatchServiceBody = z.output<typeof patchServiceBody>;

/** The `kind: Service` document of the YAML routes. */
export const serviceDocument = z.strictObject({
  apiVersion: z.unknown().optional(),
  kind: z.unknown(),
  metadata: z.strictObject({
    name: serviceName,
    tags: serviceTags.optional(),
    // accepted for compatibility with potctl documents; fogbridge has one namespace
    namespace: z.string().optional(),
  }),
  spec: z.strictObject(specFields),
});

/** Parses a `kind: Service` YAML document: the spec, and the fields it carried that are not modelled. */
export function parseServiceDocument(source: string): Parsed<CreateServiceBody> {
  const object = loadYamlDocument(source, 'Service');
  const spec = object.spec as Record<string, unknown> | null;
  if (typeof spec === 'object' && spec !== null && 'bridgePort' in spec) {
    throw new ValidationError(
      `Field 'spec.bridgePort' is assigned by the controller and cannot be set, got ${show(spec.bridgePort)}`,
    );
  }
  const { value, unknownFields } = parseBody(serviceDocument, object);
  const { metadata, spec: fields } = value;
  return { value: { name: metadata.name, tags: metadata.tags, ...fields }, unknownFields };
}

/** The service a `kind: Service` document declares (its unknown fields ignored). */
export function parseServiceYaml(source: string): CreateServiceBody {
  return parseServiceDocument(source).value;
}

export function parseCreateServiceBody(body: unknown): CreateServiceBody {
  rejectAssignedFields(body);
  return parseBody(createServiceBody, body).value;
}

export function parsePatchServiceBody(body: unknown): PatchServiceBody {
  rejectAssignedFields(body);
  return parseBody(patchServiceBody, body).value;
}

/** `bridgePort` is the controller's to assign: a body naming it is refused with the value it sent. */
export function rejectAssignedFields(body: unknown): void {
  if (body !== null && typeof body === 'object' && 'bridgePort' in body) {
    throw new ValidationError(
      `Field 'bridgePort' is assigned by the controller and cannot be set, got ${show((body as Record<string, unknown>).bridgePort)}`,
    );
  }
}

/** Fills the defaults a stored spec always has. */
export function toServiceSpec(body: CreateServiceBody): ServiceSpec {
  return {
    name: body.name,
    type: body.type,
    resource: body.resource,
    targetPort: body.targetPort,
    servicePort: body.servicePort,
    k8sType: body.k8sType,
    defaultBridge: body.defaultBridge ?? DEFAULT_ROUTER,
    tags: body.tags ?? [],
  };
}
