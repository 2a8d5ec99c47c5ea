import { z } from 'zod';
import { isHost, isHostName } from './hosts.js';
import { invisibleCharacter } from './lookalikes.js';
import { type Parsed, parseBody } from './validation.js';
import { loadYamlDocument } from './yaml.js';

/**
 * A CA or certificate name: what a Kubernetes Secret may be named, a DNS subdomain (RFC 1123): labels of
 * 1-63 lowercase letters, digits and dashes, starting and ending alphanumeric, joined by dots, at most
 * 253 characters.
 */
const SUBDOMAIN_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
export const certificateName = z
  .string()
  .refine((value) => value.length <= 253 && value.split('.').every((label) => SUBDOMAIN_LABEL.test(label)), {
    message:
      'must be a DNS subdomain (labels of at most 63 lowercase letters, digits and dashes, joined by dots; at most 253 characters)',
  });

/**
 * A self-signed CA's subject (its CN): printable text of any script, at most 64 characters (X.520's
 * upper bound for a common name), not blank, without control, invisible or formatting characters
 * (a subject that reads as something else is a spoofing vector on every tool that shows it).
 */
const caSubject = z
  .string()
  .max(64, 'must be at most 64 characters')
  .refine((value) => value.trim().length > 0, { message: 'must not be blank' })
  .superRefine((value, context) => {
    const invisible = invisibleCharacter(value);
    if (invisible) context.addIssue({ code: 'custom', message: invisible });
  });

/** The shortest CA worth making: one day (a value that makes no sense as either reading is refused). */
const MIN_EXPIRATION_MS = 86_400_000;

/**
 * `expiration` as the reference reads it: whole months from 1 to 999, else milliseconds from one day to
 * about a century; zero, negative, fractional and in-between values are refused.
 */
const expiration = z
  .number()
  .refine(
    (n) =>
      Number.isInteger(n) && ((n >= 1 && n < 1000) || (n >= MIN_EXPIRATION_MS && n <= 3_153_600_000_000)),
    {
      message: `must be whole months from 1 to 999, or milliseconds from ${MIN_EXPIRATION_MS} (one day) to 3153600000000 (about a century)`,
    },
  );

export const CA_TYPES = ['self-signed', 'k8s-secret', 'direct'] as const;

/**
 * POST /api/v3/certificates/ca, the reference's `caCreate`: `self-signed` needs `subject` and
 * `expiration` (months below 1000, else milliseconds, as the reference reads it), `k8s-secret` and
 * `direct` need `secretName`.
 */
export const createCertificateAuthorityBody = z
  .object({
    name: certificateName,
    type: z.enum(CA_TYPES),
    subject: caSubject.optional(),
    expiration: expiration.optional(),
    secretName: certificateName.optional(),
  })
  .superRefine((body, context) => {
    const need = (field: 'subject' | 'expiration' | 'secretName') => {
      if (body[field] === undefined)
        context.addIssue({ code: 'invalid_type', expected: 'string', path: [field], input: undefined });
    };
    if (body.type === 'self-signed') {
      need('subject');
      need('expiration');
    } else need('secretName');
  });

export type CreateCertificateAuthorityBody = z.output<typeof createCertificateAuthorityBody>;

export function parseCreateCertificateAuthority(input: unknown): Parsed<CreateCertificateAuthorityBody> {
  return parseBody(createCertificateAuthorityBody, input);
}

/** The reference's reading of `expiration`: below 1000 it is months of 30.44 days, else milliseconds. */
export function expirationDays(expiration: number): number {
  return expiration < 1000 ? expiration * 30.44 : expiration / 86_400_000;
}

/** At most this many names in one certificate's `hosts`. */
const MAX_CERTIFICATE_HOSTS = 100;

/** A name a certificate may be issued for: a host (see hosts.ts), or a wildcard `*.` over a DNS name. */
function isCertificateHost(value: string): boolean {
  return value.startsWith('*.') ? isHostName(value.slice(2)) : isHost(value, { bracketed: true });
}

/**
 * A certificate's `hosts`, as the reference and the SDK carry it: one string of names separated by
 * commas (`"a.example.com,10.0.0.5"`), each a DNS name, a wildcard `*.` over one, or an IP address.
 */
const certificateHosts = z
  .string()
  .max(4096, 'must be at most 4096 characters')
  .superRefine((value, context) => {
    const names = splitHosts(value);
    if (names.length === 0) context.addIssue({ code: 'custom', message: 'must name at least one host' });
    if (names.length > MAX_CERTIFICATE_HOSTS)
      context.addIssue({ code: 'custom', message: `must name at most ${MAX_CERTIFICATE_HOSTS} hosts` });
    const bad = names.find((name) => !isCertificateHost(name));
    if (bad !== undefined)
      context.addIssue({
        code: 'custom',
        message: `names ${JSON.stringify(bad.slice(0, 80))}, which is not a DNS name, a wildcard *.name or an IP address`,
      });
  });

/** The names of a `hosts` string, trimmed, empty entries dropped, each once. */
export function splitHosts(hosts: string): string[] {
  return [
    ...new Set(
      hosts
        .split(',')
        .map((name) => name.trim())
        .filter(Boolean),
    ),
  ];
}

export const CERTIFICATE_SIGNER_TYPES = ['self-signed', 'direct', 'k8s-secret'] as const;

/**
 * POST /api/v3/certificates, the reference's `certificateCreate` (the SDK's CertificateCreateRequest):
 * a leaf for `hosts` signed by the CA `ca.secretName` (types `direct` and `k8s-secret` both name a CA
 * fogbridge holds), or self-signed; `expiration` as for a CA (default five years), never past its CA.
 */
export const createCertificateBody = z
  .strictObject({
    name: certificateName,
    subject: caSubject,
    hosts: certificateHosts,
    expiration: expiration.optional(),
    ca: z.strictObject({ type: z.enum(CERTIFICATE_SIGNER_TYPES), secretName: certificateName.optional() }),
  })
  .superRefine((body, context) => {
    if (body.ca.type !== 'self-signed' && body.ca.secretName === undefined)
      context.addIssue({
        code: 'invalid_type',
        expected: 'string',
        path: ['ca', 'secretName'],
        input: undefined,
      });
  });

export type CreateCertificateBody = z.output<typeof createCertificateBody>;

/** What a YAML upload to POST /api/v3/certificates/yaml asks for: a CA, or a certificate. */
export type CertificateDocument =
  | { kind: 'CertificateAuthority'; body: CreateCertificateAuthorityBody }
  | { kind: 'Certificate'; body: CreateCertificateBody };

const documentShape = z.object({
  metadata: z.object({ name: certificateName }),
  spec: z.record(z.string(), z.unknown()),
});

/**
 * A `kind: Certificate` or `kind: CertificateAuthority` document (potctl's deploy files): the body is
 * `metadata.name` with the spec's fields, checked by the same rules as the JSON routes.
 */
export function parseCertificateDocument(source: string): Parsed<CertificateDocument> {
  const loaded = loadYamlDocument(source, ['Certificate', 'CertificateAuthority']);
  const { value } = parseBody(documentShape, loaded);
  const input = { ...value.spec, name: value.metadata.name };
  if (loaded.kind === 'CertificateAuthority') {
    const parsed = parseBody(createCertificateAuthorityBody, input, 'spec.');
    return { ...parsed, value: { kind: 'CertificateAuthority', body: parsed.value } };
  }
  const parsed = parseBody(createCertificateBody, input, 'spec.');
  return { ...parsed, value: { kind: 'Certificate', body: parsed.value } };
}

/** The YAML documents' schema, for the API description. */
export const certificateDocument = z.object({
  apiVersion: z.string().optional(),
  kind: z.enum(['Certificate', 'CertificateAuthority']),
  metadata: z.object({ name: certificateName }),
  spec: z.record(z.string(), z.unknown()),
});

/** GET /api/v3/certificates/expiring?days=: the window, in whole days (the reference's default 30). */
export const expiringWindowDays = z.coerce
  .number()
  .int('must be a whole number of days')
  .min(1, 'must be at least 1')
  .max(3650, 'must be at most 3650');
