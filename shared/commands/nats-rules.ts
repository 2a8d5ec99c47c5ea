import { createHash } from 'node:crypto';
import {
  type AccountRule,
  checkRuleName,
  FIRST_CUSTOM_RULE_ID,
  isSystemRuleName,
  type RuleKind,
  SYSTEM_ACCOUNT_RULES,
  SYSTEM_USER_RULES,
  systemRule,
  type UserRule,
} from '../domain/nats-rules.js';
import { show } from '../domain/validation.js';
import { ConflictError, ContentionError, NotFoundError, ValidationError } from '../errors.js';
import { askNatsApplicationReconciles } from '../queue/publishers.js';
import { CONFLICT, retryOnConflict } from '../retry.js';
import { getApplication, getMicroservice } from '../store/applications.js';
import {
  deleteRule,
  getStoredRule,
  getUserRow,
  listStoredRules,
  nextNatsNumber,
  putNewRule,
  replaceRule,
  type StoredRule,
} from '../store/nats-accounts.js';
import {
  forgetReference,
  recordReference,
  referenceTarget,
  referencingSources,
  touchTarget,
} from '../store/references.js';

/**
 * NATS account and user rules through the API: the five system rules (immutable, names reserved) and
 * the ones users make. A rule in use cannot be deleted; a rule's change re-signs what it signed.
 */

type Rule<K extends RuleKind> = K extends 'account' ? AccountRule : UserRule;

export type RuleView = (AccountRule | UserRule) & { id: number; isSystem: boolean };

const label = (kind: RuleKind) => (kind === 'account' ? 'NATS account rule' : 'NATS user rule');

function toView(rule: (AccountRule | UserRule) & { id: number }, isSystem: boolean): RuleView {
  const { version: _v, refToken: _r, createdAt: _c, updatedAt: _u, ...fields } = rule as StoredRule<RuleKind>;
  return { ...fields, isSystem };
}

/** A digest of what a rule makes a JWT say: a signed identity whose rule digest differs is re-signed. */
export function ruleDigest(rule: AccountRule | UserRule): string {
  const { name: _name, ...fields } = rule;
  const sorted = Object.fromEntries(Object.entries(fields).sort(([a], [b]) => (a < b ? -1 : 1)));
  return createHash('sha256').update(JSON.stringify(sorted)).digest('hex').slice(0, 16);
}

export async function listRules(kind: RuleKind): Promise<{ rules: RuleView[] }> {
  const system = kind === 'account' ? SYSTEM_ACCOUNT_RULES : SYSTEM_USER_RULES;
  const custom = await listStoredRules(kind);
  return {
    rules: [...system.map((rule) => toView(rule, true)), ...custom.map((rule) => toView(rule, false))],
  };
}

/** A rule by name, system or made through the API; undefined when there is none. */
export async function findRule<K extends RuleKind>(
  kind: K,
  name: string,
): Promise<(Rule<K> & { id: number }) | undefined> {
  return (
    (systemRule(kind, name) as (Rule<K> & { id: number }) | undefined) ?? (await getStoredRule(kind, name))
  );
}

function refuseSystemRule(kind: RuleKind, name: string): void {
  if (isSystemRuleName(name)) {
    throw new ValidationError(`${label(kind)} ${show(name)} is a system rule: reserved and immutable`);
  }
}

export async function createRule<K extends RuleKind>(kind: K, rule: Rule<K>): Promise<RuleView> {
  refuseSystemRule(kind, rule.name);
  if (await getStoredRule(kind, rule.name)) {
    throw new ConflictError(`${label(kind)} ${show(rule.name)} already exists`);
  }
  const now = new Date().toISOString();
  const row = {
    ...rule,
    id: await nextNatsNumber('rules', FIRST_CUSTOM_RULE_ID - 1),
    version: 1,
    createdAt: now,
    updatedAt: now,
  } as StoredRule<K>;
  if (!(await putNewRule(kind, row)))
    throw new ConflictError(`${label(kind)} ${show(rule.name)} already exists`);
  return toView(row, false);
}

/**
 * PATCH: the fields it names replace the rule's (the others stay). Everything signed with the rule is
 * re-signed by its application's reconcile.
 */
export async function updateRule<K extends RuleKind>(
  kind: K,
  name: string,
  patch: Partial<Rule<K>>,
): Promise<RuleView> {
  refuseSystemRule(kind, name);
  checkRuleName(kind, name, patch.name);
  const updated = await retryOnConflict(
    async () => {
      const row = await getStoredRule(kind, name);
      if (!row) throw new NotFoundError(`${label(kind)} ${show(name)} not found`);
      const next = { ...row, ...patch, name, updatedAt: new Date().toISOString() } as StoredRule<K>;
      if (!(await replaceRule(kind, next, row))) return CONFLICT;
      return { ...next, version: row.version + 1 };
    },
    {
      times: 5,
      exhausted: () => new ContentionError(`${label(kind)} ${name} is being changed concurrently; retry`),
    },
  );
  await askNatsApplicationReconciles(await applicationsUsing(kind, name));
  return toView(updated, false);
}

/** Deletes a rule nothing uses; one in use is refused, naming its users. */
export async function deleteRuleByName(kind: RuleKind, name: string): Promise<void> {
  refuseSystemRule(kind, name);
  await retryOnConflict(
    async () => {
      const row = await getStoredRule(kind, name);
      if (!row) throw new NotFoundError(`${label(kind)} ${show(name)} not found`);
      const users = await liveUsers(kind, name);
      if (users.length > 0) {
        throw new ConflictError(
          `${label(kind)} ${show(name)} is used by ${users.slice(0, 10).join(', ')}${users.length > 10 ? ` and ${users.length - 10} more` : ''}; change their rule first`,
        );
      }
      return (await deleteRule(kind, row)) ? undefined : CONFLICT;
    },
    {
      times: 5,
      exhausted: () => new ContentionError(`${label(kind)} ${name} is being changed concurrently; retry`),
    },
  );
}

/**
 * Who a rule's reference items name and still use it, read from their rows: `application <name>`,
 * `microservice <app>/<name>`, `user <app>/<name>`.
 */
async function liveUsers(kind: RuleKind, name: string): Promise<string[]> {
  const sources = await referencingSources(referenceTarget.natsRule(kind, name), 'nats-rule');
  const live = await Promise.all(sources.map((source) => sourceUsing(kind, name, source)));
  return live.filter((user): user is string => user !== undefined);
}

async function sourceUsing(kind: RuleKind, rule: string, source: string): Promise<string | undefined> {
  const [type, id] = [source.slice(0, source.indexOf(':')), source.slice(source.indexOf(':') + 1)];
  if (type === 'app') {
    const app = await getApplication(id);
    return kind === 'account' && app?.natsRule === rule ? `application ${id}` : undefined;
  }
  if (type === 'ms') {
    const ms = await getMicroservice(id);
    return kind === 'user' && ms?.natsRule === rule ? `microservice ${ms.application}/${ms.name}` : undefined;
  }
  const [application, user] = id.split('/') as [string, string];
  const row = await getUserRow(application, user);
  return kind === 'user' && row?.rule === rule ? `user ${application}/${user}` : undefined;
}

/** The applications whose accounts or users a rule signs (their reconciles re-sign them). */
async function applicationsUsing(kind: RuleKind, name: string): Promise<string[]> {
  const sources = await referencingSources(referenceTarget.natsRule(kind, name), 'nats-rule');
  const applications = await Promise.all(
    sources.map(async (source) => {
      const id = source.slice(source.indexOf(':') + 1);
      if (source.startsWith('app:')) return id;
      if (source.startsWith('ms:')) return (await getMicroservice(id))?.application;
      return id.split('/')[0];
    }),
  );
  return [...new Set(applications.filter((app): app is string => app !== undefined))];
}

/**
 * The rule a source is to be signed with, referenced before the source's row is written: the reference
 * item, then a touch of the rule, which fails when the rule is gone (so a delete that read the rule
 * before sees the reference, or fails its conditional write). System rules need no reference. Throws a
 * ValidationError naming `field` when there is no such rule.
 */
export async function referenceRule<K extends RuleKind>(
  kind: K,
  name: string,
  source: string,
  field: string,
): Promise<Rule<K> & { id: number }> {
  const rule = await findRule(kind, name);
  const missing = () =>
    new ValidationError(
      `Field '${field}': ${label(kind)} ${show(name)} not found (GET /api/v3/nats/${kind}-rules lists them)`,
    );
  if (!rule) throw missing();
  if (isSystemRuleName(name)) return rule;
  const target = referenceTarget.natsRule(kind, name);
  await recordReference(target, 'nats-rule', source);
  if (!(await touchTarget(target))) {
    await forgetReference(target, 'nats-rule', source);
    throw missing();
  }
  return (await findRule(kind, name)) ?? rule;
}
