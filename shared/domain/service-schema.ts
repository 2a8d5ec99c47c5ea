import { parseAllDocuments } from 'yaml';
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
import { firstIssueAsError, parseWith, show } from './validation.js';

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

/** Largest YAML document accepted (the multipart field `service`). */
export const MAX_YAML_BYTES = 64 * 1024;

/** A Service document is a few levels deep; anything far deeper is hostile and is refused unparsed. */
export const MAX_YAML_DEPTH = 32;

/**
 * The deepest nesting of a YAML text: flow brackets and block indentation, outside quotes and
 * comments. An estimate, but one that never under-counts what a parser would have to recurse into.
 */
export function nestingDepth(source: string): number {
  let deepest = 0;
  let flow = 0;
  for (const line of source.split('\n')) {
    const indent = line.length - line.trimStart().length;
    const content = line.trimStart();
    if (content === '' || content.startsWith('#')) continue;
    let quote: string | undefined;
    for (const char of content) {
      if (quote) {
        if (char === quote) quote = undefined;
      } else if (char === '"' || char === "'") quote = char;
      else if (char === '#') break;
      else if (char === '[' || char === '{') deepest = Math.max(deepest, ++flow + Math.floor(indent / 2));
      else if (char === ']' || char === '}') flow = Math.max(0, flow - 1);
    }
    deepest = Math.max(deepest, Math.floor(indent / 2) + 1);
  }
  return deepest;
}

/** Parses a `kind: Service` YAML document into a service spec, reporting the first problem precisely. */
export function parseServiceYaml(source: string): CreateServiceBody {
  if (Buffer.byteLength(source, 'utf8') > MAX_YAML_BYTES) {
    throw new ValidationError(`Error parsing YAML: document is larger than ${MAX_YAML_BYTES} bytes`);
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: YAML forbids these and they hint at a binary upload
  if (source.includes('\uFFFD') || /[\u0000-\u0008\u000e-\u001f]/.test(source)) {
    throw new ValidationError('Error parsing YAML: the document is not UTF-8 text');
  }
  const depth = nestingDepth(source);
  if (depth > MAX_YAML_DEPTH) {
    throw new ValidationError(
      `Error parsing YAML: nesting is ${depth} levels deep; the limit is ${MAX_YAML_DEPTH}`,
    );
  }
  const documents = parseAllDocuments(source, { uniqueKeys: true });
  if (!Array.isArray(documents)) throw new ValidationError('Error parsing YAML: empty document');
  if (documents.length === 0) throw new ValidationError('Invalid YAML format: missing kind field');
  if (documents.length > 1)
    throw new ValidationError('Error parsing YAML: expected one document, found several');
  const document = documents[0]!;
  const error = document.errors[0];
  if (error)
    throw new ValidationError(`Error parsing YAML: ${error.message.split('\n')[0]!.replace(/:$/, '')}`);
  let value: unknown;
  try {
    value = document.toJS({ maxAliasCount: 50 });
  } catch (cause) {
    throw new ValidationError(`Error parsing YAML: ${(cause as Error).message.split('\n')[0]}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ValidationError('Invalid YAML format: missing kind field');
  }
  const object = value as Record<string, unknown>;
  if (object.kind === undefined || object.kind === null)
    throw new ValidationError('Invalid YAML format: missing kind field');
  if (object.kind !== 'Service') throw new ValidationError(`Invalid kind ${show(object.kind)}`);
  if (object.metadata == null || object.spec == null) {
    throw new ValidationError('Invalid YAML format: missing metadata or spec');
  }
  if (typeof object.spec === 'object' && object.spec !== null && 'bridgePort' in object.spec) {
    throw new ValidationError(
      `Field 'spec.bridgePort' is assigned by the controller and cannot be set, got ${show((object.spec as Record<string, unknown>).bridgePort)}`,
    );
  }
  const parsed = serviceDocument.safeParse(object);
  if (!parsed.success) {
    const unknownTop = parsed.error.issues.find(
      (issue) => issue.code === 'unrecognized_keys' && issue.path.length > 0,
    );
    throw firstIssueAsError(unknownTop ? [unknownTop] : parsed.error.issues, object);
  }
  const { metadata, spec } = parsed.data;
  return { name: metadata.name, tags: metadata.tags, ...spec };
}

export function parseCreateServiceBody(body: unknown): CreateServiceBody {
  rejectAssignedFields(body);
  return parseWith(createServiceBody, body);
}

export function parsePatchServiceBody(body: unknown): PatchServiceBody {
  rejectAssignedFields(body);
  return parseWith(patchServiceBody, body);
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
