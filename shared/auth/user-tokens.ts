import {
  createLocalJWKSet,
  createRemoteJWKSet,
  importSPKI,
  type JWTPayload,
  type JWTVerifyGetKey,
  jwtVerify,
} from 'jose';
import { config, perContext } from '../context.js';
import { AuthenticationError, ForbiddenError } from '../errors.js';

export type Role = 'admin' | 'viewer';

export interface UserIdentity {
  subject: string;
  roles: Role[];
}

/** Asymmetric algorithms only: `none` and every HMAC algorithm are refused before any key is used. */
export const USER_TOKEN_ALGORITHMS = ['RS256', 'ES256', 'EdDSA'];

/** Longest Authorization header looked at; anything larger is refused unread. */
export const MAX_AUTHORIZATION_BYTES = 8 * 1024;

const BEARER = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/;

/** The compact JWT of an `Authorization: Bearer` header, or an AuthenticationError. */
export function bearerToken(authorization: string | undefined): string {
  if (!authorization)
    throw new AuthenticationError('Missing Authorization header (expected "Bearer <token>")');
  if (authorization.length > MAX_AUTHORIZATION_BYTES)
    throw new AuthenticationError('Authorization header is too large');
  const match = BEARER.exec(authorization.trim());
  if (!match) throw new AuthenticationError('Authorization header is not "Bearer <JWT>"');
  return match[1]!;
}

/** The verification key: the JWKS endpoint if configured, else the configured public key. */
const verificationKey = perContext(
  (settings): Promise<JWTVerifyGetKey | CryptoKey | Uint8Array> =>
    (async () => {
      const { jwksUrl, publicKey } = settings.auth;
      if (jwksUrl) return createRemoteJWKSet(new URL(jwksUrl));
      if (!publicKey)
        throw new Error('Neither AUTH_JWKS_URL nor AUTH_PUBLIC_KEY is set; user tokens cannot be verified');
      const trimmed = publicKey.trim();
      if (trimmed.startsWith('-----BEGIN')) {
        const algorithm = trimmed.includes('RSA') ? 'RS256' : 'EdDSA';
        return importSPKI(trimmed, algorithm);
      }
      const parsed = JSON.parse(trimmed) as { keys?: unknown[] };
      return createLocalJWKSet(parsed.keys ? (parsed as never) : ({ keys: [parsed] } as never));
    })(),
);

/** How long a verified token is taken on trust again without checking its signature (within its expiry). */
const VERIFIED_TOKEN_REUSE_MS = 5 * 60_000;
const VERIFIED_TOKENS_KEPT = 1_000;

/**
 * Tokens this instance verified lately: a client sends the same token with every request, and an
 * asymmetric signature check per request is most of what authenticating one costs. Only a good
 * signature is remembered; a token is dropped at its expiry or after VERIFIED_TOKEN_REUSE_MS, whichever
 * comes first (a key withdrawn from the JWKS stops being trusted within that window, as the JWKS
 * cache's own refresh does).
 */
const verifiedTokens = perContext(() => new Map<string, { payload: JWTPayload; until: number }>());

function rememberedPayload(token: string): JWTPayload | undefined {
  const remembered = verifiedTokens().get(token);
  if (!remembered) return undefined;
  if (Date.now() < remembered.until) return remembered.payload;
  verifiedTokens().delete(token);
  return undefined;
}

function remember(token: string, payload: JWTPayload): void {
  const kept = verifiedTokens();
  if (kept.size >= VERIFIED_TOKENS_KEPT) kept.delete(kept.keys().next().value!);
  kept.set(token, { payload, until: Math.min(Date.now() + VERIFIED_TOKEN_REUSE_MS, payload.exp! * 1000) });
}

/**
 * Verifies a user token: signature with an allowed asymmetric algorithm, issuer, audience, expiry.
 * Every failure is the same 401 so the response tells an attacker nothing.
 */
export async function verifyUserToken(authorization: string | undefined): Promise<UserIdentity> {
  const token = bearerToken(authorization);
  const { issuer, audience, rolesClaim } = config().auth;
  let payload = rememberedPayload(token);
  if (!payload) payload = await verifySignedToken(token, issuer, audience);
  refuseOverlongLifetime(payload, config().auth.userTokenMaxLifetimeSeconds);
  return { subject: String(payload.sub), roles: rolesOf(payload[rolesClaim]) };
}

async function verifySignedToken(
  token: string,
  issuer: string | undefined,
  audience: string | undefined,
): Promise<JWTPayload> {
  let payload: JWTPayload;
  try {
    const key = await verificationKey();
    ({ payload } = await jwtVerify(token, key as never, {
      algorithms: USER_TOKEN_ALGORITHMS,
      ...(issuer ? { issuer } : {}),
      ...(audience ? { audience } : {}),
      requiredClaims: ['exp', 'sub'],
    }));
  } catch {
    throw new AuthenticationError('Invalid or expired token');
  }
  remember(token, payload);
  return payload;
}

/** Clock skew tolerated between the identity provider and fogbridge. */
const CLOCK_TOLERANCE_SECONDS = 60;

/**
 * A token may not live longer than the configured cap: `exp − iat` when it says when it was issued
 * (and that is not in the future), else `exp − now`. A leaked token is then worthless after at most
 * that long, however far out its issuer dated it.
 */
function refuseOverlongLifetime(payload: JWTPayload, maxLifetimeSeconds: number): void {
  const now = Math.floor(Date.now() / 1000);
  const issuedAt = typeof payload.iat === 'number' ? payload.iat : undefined;
  if (issuedAt !== undefined && issuedAt > now + CLOCK_TOLERANCE_SECONDS)
    throw new AuthenticationError('Invalid or expired token');
  if (payload.exp! - (issuedAt ?? now) > maxLifetimeSeconds)
    throw new AuthenticationError('Invalid or expired token');
}

function rolesOf(claim: unknown): Role[] {
  const values = Array.isArray(claim) ? claim : typeof claim === 'string' ? claim.split(/[\s,]+/) : [];
  return values.filter((value): value is Role => value === 'admin' || value === 'viewer');
}

/** admin may do everything; viewer only what a route opens to viewers (reads). */
export function requireRole(identity: UserIdentity, needed: Role): void {
  if (identity.roles.includes('admin')) return;
  if (needed === 'viewer' && identity.roles.includes('viewer')) return;
  throw new ForbiddenError(
    `This request needs the ${needed === 'viewer' ? 'viewer or admin' : 'admin'} role`,
  );
}
