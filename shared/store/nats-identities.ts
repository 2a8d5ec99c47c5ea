import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { config } from '../context.js';
import {
  credsFile,
  jwtIssuer,
  newOperator,
  newSystemAccount,
  newUser,
  type SignedIdentity,
} from '../domain/nats-claims.js';
import { ContentionError } from '../errors.js';
import { CONFLICT, retryOnConflict } from '../retry.js';
import { openSecret, sealSecret } from '../secrets.js';
import { conditionalWrite, documentClient, getItem, keys, tableName } from './client.js';

/** The system account's name, under which every NATS identity of the fabric itself is stored. */
export const SYSTEM_ACCOUNT = 'SYS';

/**
 * The NATS operator, the system account and its users. Each is made once and stays until what signs
 * it changes: the system account is made again (a new key) when the operator that signed it is not the
 * current one, a system user when the system account that signed it is not. A lost race to make one
 * reads the winner's, so two concurrent first calls never make two. Seeds are sealed like private keys;
 * a user's creds file is assembled from its JWT and seed when delivered.
 */
interface IdentityRow {
  name: string;
  publicKey: string;
  jwt: string;
  seedSealed: string;
  createdAt: string;
}

export interface NatsIdentity {
  name: string;
  publicKey: string;
  jwt: string;
  seed: string;
}

type Key = { PK: string; SK: string };

/**
 * The identity stored under `key`, made (or made again) when there is none or `current` says the stored
 * one is signed by something that is no longer in force.
 */
async function ensureIdentity(
  key: Key,
  name: string,
  make: () => Promise<SignedIdentity>,
  current: (row: IdentityRow) => boolean = () => true,
): Promise<NatsIdentity> {
  return retryOnConflict(
    async () => {
      const existing = await getItem<IdentityRow>(key);
      if (existing && current(existing)) return open(existing, key);
      const made = await make();
      return (await putIdentity(key, name, made, existing)) ? { name, ...made } : CONFLICT;
    },
    {
      times: 5,
      exhausted: () => new ContentionError(`NATS identity ${key.PK} is being replaced concurrently; retry`),
    },
  );
}

/** Writes an identity over the one read (or where none was); false when another writer got there first. */
async function putIdentity(key: Key, name: string, made: SignedIdentity, replacing: IdentityRow | undefined) {
  const row: IdentityRow = {
    name,
    publicKey: made.publicKey,
    jwt: made.jwt,
    seedSealed: await sealSecret(made.seed, `${key.PK}/${key.SK}`),
    createdAt: new Date().toISOString(),
  };
  return conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: { ...key, ...row },
      ConditionExpression: replacing ? 'publicKey = :read' : 'attribute_not_exists(PK)',
      ...(replacing ? { ExpressionAttributeValues: { ':read': replacing.publicKey } } : {}),
    }),
  );
}

async function open(row: IdentityRow, key: Key): Promise<NatsIdentity> {
  return {
    name: row.name,
    publicKey: row.publicKey,
    jwt: row.jwt,
    seed: await openSecret(row.seedSealed, `${key.PK}/${key.SK}`),
  };
}

const operatorName = () => `${config().controllerName}-operator`;

/** The operator (`<CONTROLLER_NAME>-operator`, self-signed). */
export function ensureNatsOperator(): Promise<NatsIdentity> {
  return ensureIdentity(keys.natsOperator(), operatorName(), () => newOperator(operatorName()));
}

/** The operator's public key, read without opening its seed (made when there is none yet). */
export async function natsOperatorKey(): Promise<string> {
  return (
    (await getItem<IdentityRow>(keys.natsOperator()))?.publicKey ?? (await ensureNatsOperator()).publicKey
  );
}

/** The system account's key and JWT, read without opening its seed (made when there is none yet). */
export async function systemAccountJwt(): Promise<{ publicKey: string; jwt: string }> {
  const row = await getItem<IdentityRow>(keys.natsAccount(SYSTEM_ACCOUNT));
  return row ?? ensureSystemAccount();
}

/**
 * A new operator in place of the current one (same name, new key), then the system account it signs.
 * Everything else the old operator signed is made again by its own reconcile.
 */
export async function rotateNatsOperator(): Promise<NatsIdentity> {
  const current = await getItem<IdentityRow>(keys.natsOperator());
  const made = await newOperator(operatorName());
  if (!(await putIdentity(keys.natsOperator(), operatorName(), made, current))) {
    throw new Error('The NATS operator is being rotated concurrently');
  }
  await ensureSystemAccount();
  return { name: operatorName(), ...made };
}

/** The system account `SYS`, signed by the current operator. */
export async function ensureSystemAccount(): Promise<NatsIdentity> {
  const operator = await ensureNatsOperator();
  return ensureIdentity(
    keys.natsAccount(SYSTEM_ACCOUNT),
    'SYS',
    () => newSystemAccount(operator.seed),
    (row) => jwtIssuer(row.jwt) === operator.publicKey,
  );
}

/** A user of the system account: `admin-hub`, `admin-server-<agent>`, `admin-leaf-<agent>`. */
export async function ensureSystemUser(
  name: string,
  connectionTypes: readonly string[],
): Promise<NatsIdentity> {
  const account = await ensureSystemAccount();
  return ensureIdentity(
    keys.natsUser(SYSTEM_ACCOUNT, name),
    name,
    () => newUser(name, account.seed, connectionTypes),
    (row) => jwtIssuer(row.jwt) === account.publicKey,
  );
}

export async function deleteSystemUser(name: string): Promise<void> {
  await documentClient().send(
    new DeleteCommand({ TableName: tableName(), Key: keys.natsUser(SYSTEM_ACCOUNT, name) }),
  );
}

/** The creds file of a user, byte for byte as `nats` tooling writes it. */
export function credsOf(user: NatsIdentity): string {
  return credsFile(user.jwt, user.seed);
}
