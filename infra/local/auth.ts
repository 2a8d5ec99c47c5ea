import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';
import type { Config } from '../../shared/config.js';

/** Issuer and audience of the tokens the local runtime mints and accepts. */
export const LOCAL_ISSUER = 'fogbridge-local';
export const LOCAL_AUDIENCE = 'fogbridge';

interface SigningKeyFile {
  kid: string;
  privateJwk: JWK;
  publicJwk: JWK;
}

const keyPath = (dataDir: string) => join(dataDir, 'auth', 'signing-key.json');

/** The local signing key (Ed25519), generated on first start and kept in the data folder. */
export async function ensureSigningKey(dataDir: string): Promise<SigningKeyFile> {
  const path = keyPath(dataDir);
  if (existsSync(path)) return JSON.parse(readFileSync(path, 'utf8')) as SigningKeyFile;
  const { privateKey, publicKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const kid = `local-${Date.now().toString(36)}`;
  const file: SigningKeyFile = {
    kid,
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: 'EdDSA' },
    publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'EdDSA', use: 'sig' },
  };
  mkdirSync(join(dataDir, 'auth'), { recursive: true });
  writeFileSync(path, JSON.stringify(file, null, 2), { mode: 0o600 });
  return file;
}

/** A user token signed with the local key: `roles` claim holding `role`. */
export async function mintUserToken(
  dataDir: string,
  options: { role: 'admin' | 'viewer'; ttlSeconds?: number; subject?: string },
): Promise<string> {
  const key = await ensureSigningKey(dataDir);
  // One clock read for both: two could straddle a second, and a token living a second longer than the
  // maximum lifetime is refused.
  const issuedAt = Math.floor(Date.now() / 1000);
  return new SignJWT({ roles: [options.role] })
    .setProtectedHeader({ alg: 'EdDSA', kid: key.kid, typ: 'JWT' })
    .setIssuer(LOCAL_ISSUER)
    .setAudience(LOCAL_AUDIENCE)
    .setSubject(options.subject ?? `local-${options.role}`)
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + (options.ttlSeconds ?? 7 * 24 * 3600))
    .sign(await importJWK(key.privateJwk, 'EdDSA'));
}

/**
 * Local identity provider: unless an identity provider is configured (AUTH_JWKS_URL or AUTH_PUBLIC_KEY),
 * user tokens are verified against the local public key. Writes a fresh admin token to
 * `<data>/admin.token` and returns it with the authentication settings the handlers must use.
 */
export async function setUpLocalAuth(
  dataDir: string,
  auth: Config['auth'],
): Promise<{ auth: Config['auth']; adminToken: string | undefined }> {
  if (auth.jwksUrl || auth.publicKey) return { auth, adminToken: undefined };
  const key = await ensureSigningKey(dataDir);
  const token = await mintUserToken(dataDir, { role: 'admin' });
  const tokenPath = join(dataDir, 'admin.token');
  writeFileSync(tokenPath, `${token}\n`, { mode: 0o600 });
  chmodSync(tokenPath, 0o600);
  return {
    auth: {
      ...auth,
      publicKey: JSON.stringify({ keys: [key.publicJwk] }),
      issuer: LOCAL_ISSUER,
      audience: LOCAL_AUDIENCE,
    },
    adminToken: token,
  };
}

/**
 * The local runtime's key for sealing private keys in its table (AES-256-GCM), generated on first start
 * next to the signing key and readable only by its owner. KMS plays this part in AWS.
 */
export function ensureSecretsKey(dataDir: string): Buffer {
  const path = join(dataDir, 'auth', 'secrets.key');
  if (existsSync(path)) return Buffer.from(readFileSync(path, 'utf8').trim(), 'base64');
  const key = randomBytes(32);
  mkdirSync(join(dataDir, 'auth'), { recursive: true });
  writeFileSync(path, `${key.toString('base64')}\n`, { mode: 0o600 });
  return key;
}
