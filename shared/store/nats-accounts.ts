import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { AccountRule, RuleKind, UserRule } from '../domain/nats-rules.js';
import { openSecret, sealSecret } from '../secrets.js';
import {
  batchGetItems,
  conditionalWrite,
  documentClient,
  getItem,
  indexes,
  keys,
  tableName,
  withoutKeys,
} from './client.js';
import { queryIndex, queryPage, queryPartition } from './query.js';
import { unchangedReferences } from './references.js';

/**
 * What the NATS fabric holds for applications: rules, one account per application with NATS access,
 * and the users of each account. Every item is small and stands alone (an account holds its own JWT,
 * a user its own), so no bundle is ever one item: a server's JWT directory is composed when an agent
 * reads it. Accounts share one partition (read whole, consistently, when a server's directory is
 * composed); each account's users have a partition of their own. Seeds are sealed like private keys.
 */

// --- Numbers --------------------------------------------------------------------------------------

/**
 * Ids for rules, accounts and users (the SDK decodes integers), and the number each user issue takes
 * (a user's `version`: it only grows, even across a delete and a re-create of the same name, so a mount
 * that delivers the user's creds file is always rewritten by the agent).
 */
export async function nextNatsNumber(kind: 'rules' | 'accounts' | 'users', start = 0): Promise<number> {
  const { Attributes } = await documentClient().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.natsSequence(),
      UpdateExpression: 'SET #n = if_not_exists(#n, :start) + :one',
      ExpressionAttributeNames: { '#n': kind },
      ExpressionAttributeValues: { ':start': start, ':one': 1 },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  return Number(Attributes?.[kind]);
}

/**
 * The version of what the fleet's JWT directories hold: it grows after every change to an account's
 * JWT (and to which accounts an agent's directory names), so the version of every composed directory
 * only grows. It starts above any version a stored directory mount ever reached.
 */
export const FIRST_BUNDLE_VERSION = 1_000_000;

export async function bumpBundleVersion(): Promise<number> {
  const { Attributes } = await documentClient().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.natsBundleVersion(),
      UpdateExpression: 'SET version = if_not_exists(version, :start) + :one',
      ExpressionAttributeValues: { ':start': FIRST_BUNDLE_VERSION, ':one': 1 },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  return Number(Attributes?.version);
}

export async function getBundleVersion(): Promise<number> {
  return (await getItem<{ version: number }>(keys.natsBundleVersion()))?.version ?? FIRST_BUNDLE_VERSION;
}

// --- Rules ----------------------------------------------------------------------------------------

export type StoredRule<K extends RuleKind> = (K extends 'account' ? AccountRule : UserRule) & {
  id: number;
  version: number;
  refToken?: string;
  createdAt: string;
  updatedAt: string;
};

export function getStoredRule<K extends RuleKind>(kind: K, name: string): Promise<StoredRule<K> | undefined> {
  return getItem<StoredRule<K>>(keys.natsRule(kind, name));
}

/** The rules of a kind made through the API, by name (an index: may trail a write by a moment). */
export async function listStoredRules<K extends RuleKind>(kind: K): Promise<StoredRule<K>[]> {
  const items = await queryIndex<Record<string, unknown>>(indexes.byKind, `NATSRULE#${kind}`);
  return items.map((item) => withoutKeys<StoredRule<K>>(item)!);
}

const ruleItem = <K extends RuleKind>(kind: K, row: StoredRule<K>) => ({
  ...keys.natsRule(kind, row.name),
  ...row,
  GSI1PK: `NATSRULE#${kind}`,
  GSI1SK: row.name,
});

export function putNewRule<K extends RuleKind>(kind: K, row: StoredRule<K>): Promise<boolean> {
  return conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: ruleItem(kind, row),
      ConditionExpression: 'attribute_not_exists(PK)',
    }),
  );
}

/**
 * Replaces a rule written at `previous.version`; false when another writer won, or a reference touched
 * it since (the replace would put its old reference token back).
 */
export function replaceRule<K extends RuleKind>(
  kind: K,
  next: StoredRule<K>,
  previous: StoredRule<K>,
): Promise<boolean> {
  const references = unchangedReferences(previous.refToken);
  return conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: { ...ruleItem(kind, { ...next, refToken: previous.refToken }), version: previous.version + 1 },
      ConditionExpression: `#v = :v AND ${references.expression}`,
      ExpressionAttributeNames: { '#v': 'version' },
      ExpressionAttributeValues: { ':v': previous.version, ...references.values },
    }),
  );
}

/** Deletes a rule as read, unless it changed or gained a reference since (see store/references.ts). */
export function deleteRule<K extends RuleKind>(kind: K, row: StoredRule<K>): Promise<boolean> {
  const references = unchangedReferences(row.refToken);
  return conditionalWrite(
    new DeleteCommand({
      TableName: tableName(),
      Key: keys.natsRule(kind, row.name),
      ConditionExpression: `#v = :v AND ${references.expression}`,
      ExpressionAttributeNames: { '#v': 'version' },
      ExpressionAttributeValues: { ':v': row.version, ...references.values },
    }),
  );
}

// --- Accounts -------------------------------------------------------------------------------------

/**
 * An application's account. `disabled`: its application's NATS access is off (or the application is
 * gone); the JWT then allows nothing and revokes every user it had, and stays in the servers'
 * directories so running servers drop it (their resolvers never delete an account). Turning access on
 * again re-enables the same account.
 */
export interface AccountRow {
  id: number;
  application: string;
  publicKey: string;
  seedSealed: string;
  jwt: string;
  /** The account rule it is signed with. */
  rule: string;
  /** The rule's content it was signed with (a digest), so a rule change re-signs it. */
  ruleDigest: string;
  /** The operator that signed it. */
  operator: string;
  /** Revoked user keys → when (epoch seconds). */
  revocations: Record<string, number>;
  disabled: boolean;
  version: number;
  createdAt: string;
  updatedAt: string;
}

export interface OpenedAccount extends AccountRow {
  seed: string;
}

const accountPurpose = (application: string) => `NATSACCOUNTS/${application}`;

export async function openAccount(row: AccountRow): Promise<OpenedAccount> {
  return { ...row, seed: await openSecret(row.seedSealed, accountPurpose(row.application)) };
}

export function sealAccountSeed(application: string, seed: string): Promise<string> {
  return sealSecret(seed, accountPurpose(application));
}

export function getAccountRow(application: string): Promise<AccountRow | undefined> {
  return getItem<AccountRow>(keys.applicationAccount(application));
}

/** Every application account (disabled ones included), read consistently from their one partition. */
export async function listAccountRows(): Promise<AccountRow[]> {
  const items = await queryPartition<Record<string, unknown>>(keys.applicationAccount('').PK);
  return items.map((item) => withoutKeys<AccountRow>(item)!);
}

/** The applications of the next `limit` accounts after `cursor` (the sweeper's window), and where it stopped. */
export async function listAccountPage(
  cursor: Record<string, unknown> | undefined,
  limit: number,
): Promise<{ applications: string[]; next: Record<string, unknown> | undefined }> {
  const page = await queryPage<{ application: string }>(
    {
      KeyConditionExpression: 'PK = :pk',
      ExpressionAttributeValues: { ':pk': keys.applicationAccount('').PK },
      ProjectionExpression: 'application',
    },
    cursor,
    limit,
  );
  return { applications: page.items.map((item) => item.application), next: page.next };
}

export function putNewAccount(row: AccountRow): Promise<boolean> {
  return conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.applicationAccount(row.application), ...row },
      ConditionExpression: 'attribute_not_exists(PK)',
    }),
  );
}

export function replaceAccount(next: AccountRow, previous: AccountRow): Promise<boolean> {
  return conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.applicationAccount(next.application), ...next, version: previous.version + 1 },
      ConditionExpression: '#v = :v',
      ExpressionAttributeNames: { '#v': 'version' },
      ExpressionAttributeValues: { ':v': previous.version },
    }),
  );
}

// --- Users ----------------------------------------------------------------------------------------

/**
 * A user of an application's account: a microservice's (`microservice`), one made through the API
 * (`api`), an MQTT bearer user (`mqtt-bearer`) or a leaf's link into the account (`leaf`, one per leaf
 * agent). `version` is the issue number (see `nextNatsNumber`).
 */
export interface UserRow {
  id: number;
  application: string;
  name: string;
  kind: 'microservice' | 'api' | 'mqtt-bearer' | 'leaf';
  publicKey: string;
  seedSealed: string;
  jwt: string;
  /** The account key that signed it. */
  accountKey: string;
  rule: string;
  ruleDigest: string;
  microserviceUuid?: string;
  agentUuid?: string;
  /** Epoch seconds, when the user expires. */
  expiresAt?: number;
  version: number;
  createdAt: string;
  updatedAt: string;
}

const userPurpose = (application: string, name: string) => `NATSUSERS#${application}/${name}`;

export function sealUserSeed(application: string, name: string, seed: string): Promise<string> {
  return sealSecret(seed, userPurpose(application, name));
}

export function openUserSeed(row: UserRow): Promise<string> {
  return openSecret(row.seedSealed, userPurpose(row.application, row.name));
}

export async function getUserRow(application: string, name: string): Promise<UserRow | undefined> {
  const { Item } = await documentClient().send(
    new GetCommand({
      TableName: tableName(),
      Key: keys.applicationUser(application, name),
      ConsistentRead: true,
    }),
  );
  return withoutKeys<UserRow>(Item);
}

/** Users by application and name, read consistently in batches; absent ones are left out. */
export async function getUserRows(
  names: readonly { application: string; name: string }[],
): Promise<UserRow[]> {
  const found = await batchGetItems<UserRow>(names.map((n) => keys.applicationUser(n.application, n.name)));
  return names.flatMap((_, index) => (found.has(index) ? [found.get(index)!] : []));
}

/** The application accounts of these applications that exist, read consistently in batches. */
export async function getAccountRows(applications: readonly string[]): Promise<AccountRow[]> {
  const found = await batchGetItems<AccountRow>(applications.map((app) => keys.applicationAccount(app)));
  return applications.flatMap((_, index) => (found.has(index) ? [found.get(index)!] : []));
}

/** The users of one account, read consistently. */
export async function listUserRows(application: string): Promise<UserRow[]> {
  const items = await queryPartition<Record<string, unknown>>(keys.applicationUser(application, '').PK);
  return items.map((item) => withoutKeys<UserRow>(item)!);
}

/** Every user of every application account (an index: may trail a write by a moment). */
export async function listAllUserRows(): Promise<UserRow[]> {
  const items = await queryIndex<Record<string, unknown>>(indexes.byKind, 'NATSUSER');
  return items.map((item) => withoutKeys<UserRow>(item)!);
}

const userItem = (row: UserRow) => ({
  ...keys.applicationUser(row.application, row.name),
  ...row,
  GSI1PK: 'NATSUSER',
  GSI1SK: `${row.application}/${row.name}`,
});

export function putNewUser(row: UserRow): Promise<boolean> {
  return conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: userItem(row),
      ConditionExpression: 'attribute_not_exists(PK)',
    }),
  );
}

/** Replaces a user issued as `previous` (a reissue: its version is the new issue number). */
export function replaceUser(next: UserRow, previous: UserRow): Promise<boolean> {
  return conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: userItem(next),
      ConditionExpression: '#v = :v',
      ExpressionAttributeNames: { '#v': 'version' },
      ExpressionAttributeValues: { ':v': previous.version },
    }),
  );
}

export function deleteUserRow(row: UserRow): Promise<boolean> {
  return conditionalWrite(
    new DeleteCommand({
      TableName: tableName(),
      Key: keys.applicationUser(row.application, row.name),
      ConditionExpression: '#v = :v',
      ExpressionAttributeNames: { '#v': 'version' },
      ExpressionAttributeValues: { ':v': row.version },
    }),
  );
}
