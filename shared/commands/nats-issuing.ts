import {
  accountClaims,
  newAccountKey,
  newUserKey,
  signAccount,
  signUser,
  userClaims,
} from '../domain/nats-claims.js';
import {
  type AccountRule,
  APPLICATION_ACCOUNT_RULE,
  LEAF_USER_RULE,
  MICROSERVICE_USER_RULE,
  type UserRule,
} from '../domain/nats-rules.js';
import { ContentionError } from '../errors.js';
import { CONFLICT, retryOnConflict } from '../retry.js';
import type { ApplicationRow } from '../store/applications.js';
import {
  type AccountRow,
  getAccountRow,
  nextNatsNumber,
  type OpenedAccount,
  putNewAccount,
  putNewUser,
  replaceAccount,
  replaceUser,
  sealAccountSeed,
  sealUserSeed,
  type UserRow,
} from '../store/nats-accounts.js';
import { ensureNatsOperator, type NatsIdentity, natsOperatorKey } from '../store/nats-identities.js';
import { findRule, ruleDigest } from './nats-rules.js';

/**
 * Signing against the store: an application's account converged to what its application asks for
 * (created, re-signed, re-keyed under a new operator, disabled), and users issued in it. Every write is
 * conditioned on what was read; telling the agents is the caller's.
 */

const now = () => new Date().toISOString();
const epochSeconds = () => Math.floor(Date.now() / 1000);

/** The rule an application's account is signed with (its own, else the default). */
async function accountRuleOf(app: ApplicationRow | undefined): Promise<AccountRule> {
  const name = app?.natsRule ?? APPLICATION_ACCOUNT_RULE;
  const rule = (await findRule('account', name)) ?? (await findRule('account', APPLICATION_ACCOUNT_RULE))!;
  return rule;
}

async function userRuleNamed(name: string | undefined, fallback: string): Promise<UserRule> {
  return (await findRule('user', name ?? fallback)) ?? (await findRule('user', fallback))!;
}

/** The JWT an account row says it should have: its rule, revocations and state, by the operator. */
function signAccountRow(
  row: Omit<AccountRow, 'jwt'>,
  rule: AccountRule,
  operator: NatsIdentity,
): Promise<string> {
  return signAccount(
    row.application,
    row.publicKey,
    operator.seed,
    accountClaims(rule, row.revocations, { disabled: row.disabled }),
  );
}

/** Whether the stored account is what the application asks for now (else it is re-signed). */
function accountCurrent(row: AccountRow, rule: AccountRule, operator: string, enabled: boolean) {
  return (
    row.operator === operator &&
    row.rule === rule.name &&
    row.ruleDigest === ruleDigest(rule) &&
    row.disabled === !enabled
  );
}

export interface AccountChange {
  /** The account as it stands (its seed is opened only when something is to be signed with it). */
  account: AccountRow | undefined;
  /** The account's JWT changed (the fleet's directories move on). */
  changed: boolean;
  /** Its key changed (a new operator): every user is reissued, leaf links name the new key. */
  rekeyed: boolean;
  /** It was made, re-keyed, disabled or enabled: the leaf links into it change. */
  relinked: boolean;
}

/**
 * The account converged with `revoked` added to its revocations: created when the application has NATS
 * access and none exists, re-keyed under a new operator, re-signed when its rule, state or revocations
 * differ. Retried until its conditional write holds.
 */
export async function convergeAccount(
  app: ApplicationRow | undefined,
  application: string,
  revoked: string[],
): Promise<AccountChange> {
  const [rule, operatorKey] = await Promise.all([accountRuleOf(app), natsOperatorKey()]);
  const enabled = app?.natsAccess === true;
  return retryOnConflict(
    async (): Promise<AccountChange | typeof CONFLICT> => {
      const row = await getAccountRow(application);
      if (!row && !enabled) return { account: undefined, changed: false, rekeyed: false, relinked: false };
      const fresh = revoked.filter((key) => row?.revocations[key] === undefined);
      if (row && accountCurrent(row, rule, operatorKey, enabled) && fresh.length === 0) {
        return { account: row, changed: false, rekeyed: false, relinked: false };
      }
      // Something is to be signed: only now is the operator's seed opened.
      const operator = await ensureNatsOperator();
      if (!row) {
        const created = await createAccount(application, rule, operator);
        return created ? { account: created, changed: true, rekeyed: false, relinked: true } : CONFLICT;
      }
      const next = await resignedAccount(row, rule, operator, enabled, fresh);
      if (!(await replaceAccount(next, row))) return CONFLICT;
      return {
        account: { ...next, version: row.version + 1 },
        changed: true,
        rekeyed: next.publicKey !== row.publicKey,
        relinked: next.publicKey !== row.publicKey || next.disabled !== row.disabled,
      };
    },
    {
      times: 8,
      exhausted: () =>
        new ContentionError(
          `The NATS account of application ${application} is being changed concurrently; retry`,
        ),
    },
  );
}

async function createAccount(application: string, rule: AccountRule, operator: NatsIdentity) {
  const key = newAccountKey();
  const base = {
    id: 1 + (await nextNatsNumber('accounts')),
    application,
    publicKey: key.publicKey,
    seedSealed: await sealAccountSeed(application, key.seed),
    rule: rule.name,
    ruleDigest: ruleDigest(rule),
    operator: operator.publicKey,
    revocations: {},
    disabled: false,
    version: 1,
    createdAt: now(),
    updatedAt: now(),
  };
  const row: AccountRow = { ...base, jwt: await signAccountRow(base, rule, operator) };
  return (await putNewAccount(row)) ? row : undefined;
}

/**
 * Revocations an account keeps before it gets a new key instead: its item (and JWT) stays small, some
 * 45 KB at most; the new key makes every earlier user verify nowhere, as the revocations did.
 */
export const MAX_REVOCATIONS = 300;

/**
 * Under a new operator, or past `MAX_REVOCATIONS`, the account gets a new key (users signed by the old
 * one then verify nowhere, and its revocations start afresh); else the same key.
 */
async function resignedAccount(
  row: AccountRow,
  rule: AccountRule,
  operator: NatsIdentity,
  enabled: boolean,
  revoked: string[],
): Promise<AccountRow> {
  const rekey =
    row.operator !== operator.publicKey ||
    Object.keys(row.revocations).length + revoked.length > MAX_REVOCATIONS;
  const key = rekey ? newAccountKey() : undefined;
  const stamp = epochSeconds();
  const base = {
    ...row,
    ...(key
      ? { publicKey: key.publicKey, seedSealed: await sealAccountSeed(row.application, key.seed) }
      : {}),
    rule: rule.name,
    ruleDigest: ruleDigest(rule),
    operator: operator.publicKey,
    revocations: key ? {} : { ...row.revocations, ...Object.fromEntries(revoked.map((k) => [k, stamp])) },
    disabled: !enabled,
    updatedAt: now(),
  };
  return { ...base, jwt: await signAccountRow(base, rule, operator) };
}

/** What a user is issued as: its name and kind, its rule and what its kind adds. */
export interface UserSpec {
  name: string;
  kind: UserRow['kind'];
  rule: UserRule;
  microserviceUuid?: string;
  agentUuid?: string;
  expiresAt?: number;
  bearer?: boolean;
  connectionTypes?: readonly string[];
}

/**
 * Issues (or reissues, over `previous`) a user: a new key, signed by the account. Its version is a new
 * issue number. Undefined when another writer issued it first.
 */
export async function issueUser(
  account: OpenedAccount,
  spec: UserSpec,
  previous?: UserRow,
): Promise<UserRow | undefined> {
  const key = newUserKey();
  const claims = userClaims(spec.rule, {
    ...(spec.bearer !== undefined ? { bearer: spec.bearer } : {}),
    ...(spec.connectionTypes ? { connectionTypes: spec.connectionTypes } : {}),
  });
  const version = await nextNatsNumber('users');
  const row: UserRow = {
    id: previous?.id ?? version,
    application: account.application,
    name: spec.name,
    kind: spec.kind,
    publicKey: key.publicKey,
    seedSealed: await sealUserSeed(account.application, spec.name, key.seed),
    jwt: await signUser(spec.name, key.publicKey, account.seed, claims, spec.expiresAt),
    accountKey: account.publicKey,
    rule: spec.rule.name,
    ruleDigest: ruleDigest(spec.rule),
    ...(spec.microserviceUuid ? { microserviceUuid: spec.microserviceUuid } : {}),
    ...(spec.agentUuid ? { agentUuid: spec.agentUuid } : {}),
    ...(spec.expiresAt !== undefined ? { expiresAt: spec.expiresAt } : {}),
    version,
    createdAt: previous?.createdAt ?? now(),
    updatedAt: now(),
  };
  const written = previous ? await replaceUser(row, previous) : await putNewUser(row);
  return written ? row : undefined;
}

/** A user as it should be re-issued: same name, kind, rule and expiry. */
export async function specOfUser(user: UserRow): Promise<UserSpec> {
  const fallback = user.kind === 'leaf' ? LEAF_USER_RULE : MICROSERVICE_USER_RULE;
  return {
    name: user.name,
    kind: user.kind,
    rule: await userRuleNamed(user.rule, fallback),
    ...(user.microserviceUuid ? { microserviceUuid: user.microserviceUuid } : {}),
    ...(user.agentUuid ? { agentUuid: user.agentUuid } : {}),
    ...(user.expiresAt !== undefined ? { expiresAt: user.expiresAt } : {}),
    ...(user.kind === 'mqtt-bearer' ? { bearer: true } : {}),
  };
}
