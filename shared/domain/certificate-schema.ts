import { z } from 'zod';
import { invisibleCharacter } from './lookalikes.js';
import { type Parsed, parseBody } from './validation.js';

/**
 * A CA or certificate name: what a Kubernetes Secret may be named, a DNS subdomain (RFC 1123): labels of
 * 1-63 lowercase letters, digits and dashes, starting and ending alphanumeric, joined by dots, at most
 * 253 characters.
 */
const SUBDOMAIN_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const certificateName = z
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
    expiration: z
      .number()
      .refine(
        (n) =>
          Number.isInteger(n) && ((n >= 1 && n < 1000) || (n >= MIN_EXPIRATION_MS && n <= 3_153_600_000_000)),
        {
          message: `must be whole months from 1 to 999, or milliseconds from ${MIN_EXPIRATION_MS} (one day) to 3153600000000 (about a century)`,
        },
      )
      .optional(),
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
