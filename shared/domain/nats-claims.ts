import {
  createPrivateKey,
  createPublicKey,
  sign as signNatively,
  verify as verifyNatively,
} from 'node:crypto';
import {
  type Account,
  createAccount,
  createOperator,
  createUser,
  encodeAccount,
  encodeOperator,
  encodeUser,
  fmtCreds,
  fromSeed,
  type User,
} from '@nats-io/jwt';
import { type KeyPair, Prefix } from '@nats-io/nkeys';
// The library's seed and key codec (not re-exported by its entry point; the same code its pairs use).
import { Codec } from '@nats-io/nkeys/lib/codec.js';
import { type AccountRule, SYSTEM_ACCOUNT_RULES, type UserRule } from './nats-rules.js';

/**
 * The NATS identities the controller signs, with `@nats-io/jwt`: a self-signed operator, the accounts it
 * signs (the system account `SYS`, one per application with NATS access), and their users. Keys travel
 * as seeds. What a rule puts in a JWT is decided here.
 */

export interface SignedIdentity {
  publicKey: string;
  seed: string;
  jwt: string;
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const seedOf = (key: { getSeed(): Uint8Array }) => text(key.getSeed());

/** DER of a PKCS#8 Ed25519 private key, up to its 32-byte seed. */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
/** Signing key pairs made from seeds, kept (the same few operator and account keys sign again and again). */
const signers = new Map<string, KeyPair>();
const SIGNERS_KEPT = 10_000;

/**
 * The nkey pair of a seed, with its public key and signatures computed by Node's native Ed25519. The
 * library's own pair computes the public key from the seed in JavaScript on every signature and every
 * `getPublicKey` (about a millisecond each); Ed25519 signatures are deterministic, so the native ones
 * are byte for byte the library's. The seed and key encodings are the library's own (its codec).
 */
function nativePair(seed: string): KeyPair {
  const encoded = new TextEncoder().encode(seed);
  const { prefix, buf } = Codec.decodeSeed(encoded);
  const privateKey = createPrivateKey({
    key: Buffer.concat([ED25519_PKCS8_PREFIX, buf]),
    format: 'der',
    type: 'pkcs8',
  });
  const rawPublic = Buffer.from(createPublicKey(privateKey).export({ format: 'jwk' }).x!, 'base64url');
  const publicKey = text(Codec.encode(prefix, rawPublic));
  const library = fromSeed(encoded);
  return {
    getPublicKey: () => publicKey,
    // tweetnacl's 64-byte secret key: the seed, then the public key.
    getPrivateKey: () => Codec.encode(Prefix.Private, Buffer.concat([buf, rawPublic])),
    getSeed: () => library.getSeed(),
    sign: (input) => new Uint8Array(signNatively(null, input, privateKey)),
    verify: (input, signature) => verifyNatively(null, input, createPublicKey(privateKey), signature),
    clear: () => library.clear(),
    seal: (input, recipient, nonce) => library.seal(input, recipient, nonce),
    open: (message, sender) => library.open(message, sender),
  };
}

/** The signing pair of a seed (kept: see `signers`). */
export function keyOf(seed: string): KeyPair {
  const known = signers.get(seed);
  if (known) return known;
  const pair = nativePair(seed);
  if (signers.size >= SIGNERS_KEPT) signers.delete(signers.keys().next().value!);
  signers.set(seed, pair);
  return pair;
}

export async function newOperator(name: string): Promise<SignedIdentity> {
  const key = nativePair(seedOf(createOperator()));
  return { publicKey: key.getPublicKey(), seed: seedOf(key), jwt: await encodeOperator(name, key) };
}

/**
 * A new account or user key pair (`A…` / `U…`), as its public key and seed. The pair is kept among the
 * signers: what is made next with it (the user's creds file, the account's JWT) signs without deriving
 * it again.
 */
export function newAccountKey(): { publicKey: string; seed: string } {
  const seed = seedOf(createAccount());
  return { publicKey: keyOf(seed).getPublicKey(), seed };
}

export function newUserKey(): { publicKey: string; seed: string } {
  const seed = seedOf(createUser());
  return { publicKey: keyOf(seed).getPublicKey(), seed };
}

/**
 * An account's claims from its rule. A limit the rule leaves out is unlimited (-1), not 0: NATS reads
 * a missing limit as 0, which would forbid connections or subscriptions. JetStream is on when the rule
 * sets any JetStream limit, and then the ones it leaves out are unlimited too. A disabled account (its
 * application's NATS access turned off) allows nothing: no connection, leaf or subscription.
 */
export function accountClaims(
  rule: AccountRule,
  revocations: Readonly<Record<string, number>> = {},
  options: { disabled?: boolean } = {},
): Record<string, unknown> {
  const limit = (value: number | undefined) => (options.disabled ? 0 : (value ?? -1));
  const jetstream = [
    rule.memStorage,
    rule.diskStorage,
    rule.streams,
    rule.consumer,
    rule.maxAckPending,
    rule.memMaxStreamBytes,
    rule.diskMaxStreamBytes,
    rule.maxBytesRequired,
  ].some((value) => value !== undefined);
  const limits: Record<string, unknown> = {
    conn: limit(rule.maxConnections),
    leaf: limit(rule.maxLeafNodeConnections),
    data: limit(rule.maxData),
    exports: limit(rule.maxExports),
    imports: limit(rule.maxImports),
    payload: limit(rule.maxMsgPayload),
    subs: limit(rule.maxSubscriptions),
    wildcards: options.disabled ? false : (rule.exportsAllowWildcards ?? true),
    ...(rule.disallowBearer !== undefined ? { disallow_bearer: rule.disallowBearer } : {}),
    ...(jetstream && !options.disabled
      ? {
          mem_storage: rule.memStorage ?? -1,
          disk_storage: rule.diskStorage ?? -1,
          streams: rule.streams ?? -1,
          consumer: rule.consumer ?? -1,
          max_ack_pending: rule.maxAckPending ?? -1,
          mem_max_stream_bytes: rule.memMaxStreamBytes ?? -1,
          disk_max_stream_bytes: rule.diskMaxStreamBytes ?? -1,
          max_bytes_required: rule.maxBytesRequired ?? false,
        }
      : {}),
    ...(rule.tieredLimits && !options.disabled ? { tiered_limits: rule.tieredLimits } : {}),
  };
  return {
    limits,
    default_permissions: permissions(rule),
    ...(rule.description !== undefined ? { description: rule.description } : {}),
    ...(rule.infoUrl !== undefined ? { info_url: rule.infoUrl } : {}),
    ...(rule.imports?.length ? { imports: rule.imports } : {}),
    ...(rule.exports?.length ? { exports: rule.exports } : {}),
    ...(Object.keys(revocations).length > 0 ? { revocations: { ...revocations } } : {}),
  };
}

/** The publish, subscribe and response permissions a rule states (only what it sets). */
function permissions(
  rule: Pick<AccountRule, 'pubAllow' | 'pubDeny' | 'subAllow' | 'subDeny' | 'respMax' | 'respTtl'>,
) {
  const side = (allow?: string[], deny?: string[]) => ({
    ...(allow ? { allow } : {}),
    ...(deny ? { deny } : {}),
  });
  return {
    pub: side(rule.pubAllow, rule.pubDeny),
    sub: side(rule.subAllow, rule.subDeny),
    ...(rule.respMax !== undefined || rule.respTtl !== undefined
      ? { resp: { max: rule.respMax ?? -1, ttl: rule.respTtl ?? 0 } }
      : {}),
  };
}

/**
 * A user's claims from its rule: limits left out are unlimited; `bearer` (an MQTT bearer user) and
 * `connectionTypes` are what the kind of user needs whatever its rule says.
 */
export function userClaims(
  rule: UserRule,
  options: { bearer?: boolean; connectionTypes?: readonly string[] } = {},
): Record<string, unknown> {
  const { pub, sub, resp } = permissions(rule);
  return {
    pub,
    sub,
    ...(resp ? { resp } : {}),
    subs: rule.maxSubscriptions ?? -1,
    data: rule.maxData ?? -1,
    payload: rule.maxPayload ?? -1,
    bearer_token: options.bearer ?? rule.bearerToken ?? false,
    allowed_connection_types: [...(options.connectionTypes ?? rule.allowedConnectionTypes ?? [])],
    ...(rule.proxyRequired !== undefined ? { proxy_required: rule.proxyRequired } : {}),
    ...(rule.src ? { src: rule.src } : {}),
    ...(rule.times ? { times: rule.times } : {}),
    ...(rule.timesLocation !== undefined ? { times_location: rule.timesLocation } : {}),
    ...(rule.tags ? { tags: rule.tags } : {}),
  };
}

/** An account JWT, signed by the operator. */
export function signAccount(
  name: string,
  accountPublicKey: string,
  operatorSeed: string,
  claims: Record<string, unknown>,
): Promise<string> {
  return encodeAccount(name, accountPublicKey, claims as Partial<Account>, { signer: keyOf(operatorSeed) });
}

/** A user JWT, signed by its account; `expiresAt` (epoch seconds) makes it expire. */
export function signUser(
  name: string,
  userPublicKey: string,
  accountSeed: string,
  claims: Record<string, unknown>,
  expiresAt?: number,
): Promise<string> {
  return encodeUser(
    name,
    userPublicKey,
    keyOf(accountSeed),
    claims as Partial<User>,
    expiresAt !== undefined ? { exp: expiresAt } : {},
  );
}

/** The system account `SYS`, signed with the system account rule (unlimited, the `$SYS` exports). */
export async function newSystemAccount(operatorSeed: string): Promise<SignedIdentity> {
  const key = newAccountKey();
  const jwt = await signAccount('SYS', key.publicKey, operatorSeed, accountClaims(SYSTEM_ACCOUNT_RULES[0]!));
  return { ...key, jwt };
}

/** A user of an account: unlimited, connecting as a client or (for a leaf's system user) a leafnode. */
export async function newUser(
  name: string,
  accountSeed: string,
  connectionTypes: readonly string[],
): Promise<SignedIdentity & { creds: string }> {
  const key = newUserKey();
  const jwt = await signUser(name, key.publicKey, accountSeed, {
    data: -1,
    payload: -1,
    subs: -1,
    allowed_connection_types: [...connectionTypes],
    pub: {},
    sub: {},
  });
  return { ...key, jwt, creds: credsFile(jwt, key.seed) };
}

/** The creds file of a user, byte for byte as `nats` tooling writes it. */
export function credsFile(jwt: string, seed: string): string {
  return text(fmtCreds(jwt, keyOf(seed)));
}

/** The issuer (`iss`) of a JWT: the key that signed it. */
export function jwtIssuer(jwt: string): string {
  const payload = jwt.split('.')[1] ?? '';
  try {
    return String(
      (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { iss?: unknown }).iss ?? '',
    );
  } catch {
    return '';
  }
}
