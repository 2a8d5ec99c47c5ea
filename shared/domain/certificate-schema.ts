import { z } from 'zod';
import { type Parsed, parseBody } from './validation.js';

/** A CA or certificate name: what a Kubernetes Secret may be named (a DNS subdomain). */
const certificateName = z.string().refine((value) => /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/.test(value), {
  message: 'must be a DNS subdomain (lowercase letters, digits, dots and dashes, at most 253 characters)',
});

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
    subject: z.string().min(1, 'must not be empty').max(64, 'must be at most 64 characters').optional(),
    expiration: z
      .number()
      .refine((n) => Number.isInteger(n) && n > 0 && n <= 3_153_600_000_000, {
        message: 'must be a positive whole number (months below 1000, else milliseconds)',
      })
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
