import { show } from './validation.js';

/**
 * Which users an application's account should have, decided from what is stored. Pure: the reconcile
 * reads the rows and the rules' digests, this says what to revoke, issue and reissue.
 *
 * - An application without NATS access has no users: every one is revoked.
 * - A microservice with NATS access has a user named after it; a microservice user whose microservice
 *   is gone, has lost NATS access or is another microservice of the same name is revoked.
 * - A user that no longer verifies (another account key: a new operator), whose key was revoked, or
 *   whose rule changed since it was signed, is reissued (a new key; the old one is revoked).
 * - A microservice whose name an API user already has gets no user: that is a conflict to report.
 * - Leaf users are each leaf's own (its NATS reconcile makes and drops them); here they are only
 *   revoked with the account or reissued.
 */

export type UserKind = 'microservice' | 'api' | 'mqtt-bearer' | 'leaf';

export interface PlannedUser {
  name: string;
  kind: UserKind;
  publicKey: string;
  accountKey: string;
  rule: string;
  ruleDigest: string;
  microserviceUuid?: string;
}

export interface PlannedMicroservice {
  uuid: string;
  name: string;
  natsAccess?: boolean;
  natsRule?: string;
}

export interface UserPlanInput<U extends PlannedUser, M extends PlannedMicroservice> {
  enabled: boolean;
  /** The account as it stands (absent: none yet, or none wanted). */
  account?: { publicKey: string; revocations: Readonly<Record<string, number>> };
  users: readonly U[];
  microservices: readonly M[];
  /** Each rule's digest by name (every rule the users and microservices name). */
  ruleDigests: ReadonlyMap<string, string>;
  /** The user rule a microservice's user gets when it names none. */
  defaultUserRule: string;
  /** Only this microservice's user is considered (a change to one microservice). */
  scope?: string;
}

export interface UserPlan<U, M> {
  revoke: U[];
  issue: M[];
  reissue: U[];
  conflicts: { microservice: M; user: U }[];
}

export function planAccountUsers<U extends PlannedUser, M extends PlannedMicroservice>(
  input: UserPlanInput<U, M>,
): UserPlan<U, M> {
  const plan: UserPlan<U, M> = { revoke: [], issue: [], reissue: [], conflicts: [] };
  if (!input.enabled) return { ...plan, revoke: [...input.users] };
  const byUuid = new Map(input.microservices.map((ms) => [ms.uuid, ms]));
  const inScope = (uuid: string | undefined) => input.scope === undefined || uuid === input.scope;
  for (const user of input.users) {
    if (user.kind !== 'microservice') continue;
    const ms = user.microserviceUuid ? byUuid.get(user.microserviceUuid) : undefined;
    const wanted = ms?.natsAccess === true && ms.name === user.name;
    if (!wanted && (inScope(user.microserviceUuid) || !ms)) plan.revoke.push(user);
  }
  const revoked = new Set(plan.revoke);
  const byName = new Map(input.users.filter((user) => !revoked.has(user)).map((user) => [user.name, user]));
  for (const ms of input.microservices) {
    if (ms.natsAccess !== true || !inScope(ms.uuid)) continue;
    const user = byName.get(ms.name);
    if (!user) plan.issue.push(ms);
    else if (user.kind !== 'microservice') plan.conflicts.push({ microservice: ms, user });
  }
  for (const user of byName.values()) {
    if (user.kind === 'microservice' && !inScope(user.microserviceUuid)) continue;
    const ms = user.microserviceUuid ? byUuid.get(user.microserviceUuid) : undefined;
    const rule = user.kind === 'microservice' ? (ms?.natsRule ?? input.defaultUserRule) : user.rule;
    if (!userVerifies(user, input.account) || input.ruleDigests.get(rule) !== user.ruleDigest)
      plan.reissue.push(user);
  }
  return plan;
}

/** Whether a user verifies under the account as it stands: signed by its key, not revoked. */
export function userVerifies(
  user: Pick<PlannedUser, 'publicKey' | 'accountKey'>,
  account: { publicKey: string; revocations: Readonly<Record<string, number>> } | undefined,
): boolean {
  return (
    account !== undefined &&
    user.accountKey === account.publicKey &&
    account.revocations[user.publicKey] === undefined
  );
}

// --- User names and expiry -----------------------------------------------------------------------

/**
 * Names an API user may not take in an application's account: the system account's own names (`SYS`,
 * `admin-hub`, a server's `admin-server-…` and a leaf's `admin-leaf-…`), and a leaf's link user
 * (`leaf-…`), whatever the case.
 */
export function reservedUserName(name: string): string | undefined {
  const lower = name.toLowerCase();
  if (
    lower === 'sys' ||
    lower === 'admin-hub' ||
    /^admin-(server|leaf)-/.test(lower) ||
    lower.startsWith('leaf-')
  )
    return `${show(name)} is a name fogbridge gives its own NATS users (SYS, admin-hub, admin-server-*, admin-leaf-*, leaf-*)`;
  return undefined;
}

/** The longest a user may be made to live: three years, as the reference allows. */
export const MAX_USER_LIFETIME_SECONDS = 3 * 365 * 24 * 3600;

/**
 * `expiresIn` as potctl sends it (seconds, a number) or as the reference reads it (`<n>h`, `<n>d`,
 * `<n>m` for months of 30 days): the lifetime in seconds, or a problem naming the value.
 */
export function lifetimeSeconds(expiresIn: number | string): number | string {
  if (typeof expiresIn === 'number') {
    if (!Number.isInteger(expiresIn)) return `must be a whole number of seconds, got ${show(expiresIn)}`;
    if (expiresIn <= 0) return `must be in the future (a positive number of seconds), got ${show(expiresIn)}`;
    if (expiresIn > MAX_USER_LIFETIME_SECONDS)
      return `must be at most ${MAX_USER_LIFETIME_SECONDS} seconds (3 years), got ${show(expiresIn)}`;
    return expiresIn;
  }
  const match = /^([0-9]{1,7})([hdm])$/.exec(expiresIn);
  if (!match) return `must be seconds, or <number><h|d|m> such as 24h, 7d, 3m; got ${show(expiresIn)}`;
  const count = Number(match[1]);
  const seconds = count * { h: 3600, d: 86_400, m: 30 * 86_400 }[match[2] as 'h' | 'd' | 'm'];
  if (count <= 0) return `must be in the future, got ${show(expiresIn)}`;
  if (seconds > MAX_USER_LIFETIME_SECONDS)
    return `must be at most 3 years (26280h, 1095d, 36m), got ${show(expiresIn)}`;
  return seconds;
}

// --- Where a microservice finds its creds --------------------------------------------------------

/** The folder a microservice's creds are mounted at, as the reference mounts them. */
export const MICROSERVICE_CREDS_DIR = '/etc/nats/creds';

/** The secret mount that carries a microservice's creds file, and the file's key in it. */
export function microserviceCredsMount(application: string, microservice: string) {
  return {
    name: `nats-creds-${application}-${microservice}`,
    key: `${application}/${microservice}.creds`,
    path: `${MICROSERVICE_CREDS_DIR}/${application}/${microservice}.creds`,
  };
}

/** The user a leaf links into an application's account as, and its creds file in the leaf's mount. */
export function leafUser(application: string, agentToken: string) {
  return { name: `leaf-${agentToken}`, key: `${application}/leaf-${agentToken}.creds` };
}
