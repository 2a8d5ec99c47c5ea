import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { fmtCreds, fromSeed } from '@nats-io/jwt';
import { config } from '../context.js';
import { newOperator, newSystemAccount, newUser, type SignedIdentity } from '../domain/nats-claims.js';
import { openSecret, sealSecret } from '../secrets.js';
import { conditionalWrite, documentClient, getItem, keys, tableName } from './client.js';

/** The system account's name, under which every NATS identity fogbridge issues is stored. */
export const SYSTEM_ACCOUNT = 'SYS';

/**
 * The NATS operator, the system account and its users, each created once and then stable (a lost race
 * to create one reads the winner's, so two concurrent first calls never make two operators). Seeds are
 * sealed like private keys; a user's creds file is assembled from its JWT and seed when delivered.
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

async function ensureIdentity(
  key: { PK: string; SK: string },
  name: string,
  make: () => Promise<SignedIdentity>,
): Promise<NatsIdentity> {
  const existing = await getItem<IdentityRow>(key);
  if (existing) return open(existing, key);
  const made = await make();
  const row: IdentityRow = {
    name,
    publicKey: made.publicKey,
    jwt: made.jwt,
    seedSealed: await sealSecret(made.seed, `${key.PK}/${key.SK}`),
    createdAt: new Date().toISOString(),
  };
  const written = await conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: { ...key, ...row },
      ConditionExpression: 'attribute_not_exists(PK)',
    }),
  );
  if (written) return { name, publicKey: made.publicKey, jwt: made.jwt, seed: made.seed };
  return open((await getItem<IdentityRow>(key))!, key);
}

async function open(row: IdentityRow, key: { PK: string; SK: string }): Promise<NatsIdentity> {
  return {
    name: row.name,
    publicKey: row.publicKey,
    jwt: row.jwt,
    seed: await openSecret(row.seedSealed, `${key.PK}/${key.SK}`),
  };
}

/** The operator (`<CONTROLLER_NAME>-operator`, self-signed). */
export function ensureNatsOperator(): Promise<NatsIdentity> {
  const name = `${config().controllerName}-operator`;
  return ensureIdentity(keys.natsOperator(), name, () => newOperator(name));
}

/** The system account `SYS`, signed by the operator. */
export async function ensureSystemAccount(): Promise<NatsIdentity> {
  const operator = await ensureNatsOperator();
  return ensureIdentity(keys.natsAccount(SYSTEM_ACCOUNT), 'SYS', () => newSystemAccount(operator.seed));
}

/** A user of the system account: `admin-hub`, `admin-server-<agent>`, `admin-leaf-<agent>`. */
export async function ensureSystemUser(
  name: string,
  connectionTypes: readonly string[],
): Promise<NatsIdentity> {
  const account = await ensureSystemAccount();
  return ensureIdentity(keys.natsUser(SYSTEM_ACCOUNT, name), name, () =>
    newUser(name, account.seed, connectionTypes),
  );
}

export async function deleteSystemUser(name: string): Promise<void> {
  await documentClient().send(
    new DeleteCommand({ TableName: tableName(), Key: keys.natsUser(SYSTEM_ACCOUNT, name) }),
  );
}

/** The creds file of a user, byte for byte as `nats` tooling writes it. */
export function credsOf(user: NatsIdentity): string {
  return new TextDecoder().decode(fmtCreds(user.jwt, fromSeed(new TextEncoder().encode(user.seed))));
}
