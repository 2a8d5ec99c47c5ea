import { lifetimeSeconds, reservedUserName } from '../domain/nats-accounts.js';
import { credsFile } from '../domain/nats-claims.js';
import { MICROSERVICE_USER_RULE, MQTT_BEARER_USER_RULE } from '../domain/nats-rules.js';
import { show } from '../domain/validation.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { askNatsOperatorReconcile } from '../queue/publishers.js';
import {
  type ApplicationRow,
  getApplication,
  getMicroserviceUuidByName,
  putApplication,
} from '../store/applications.js';
import {
  type AccountRow,
  getAccountRow,
  getUserRow,
  listAccountRows,
  listAllUserRows,
  listUserRows,
  openAccount,
  openUserSeed,
  type UserRow,
} from '../store/nats-accounts.js';
import { ensureNatsOperator, ensureSystemAccount, rotateNatsOperator } from '../store/nats-identities.js';
import { reconcileApplicationNats, revokeUsers } from './nats-applications.js';
import { convergeAccount, issueUser } from './nats-issuing.js';
import { referenceRule } from './nats-rules.js';

/**
 * The NATS routes of applications: the operator (and its rotation), the accounts, and the users of an
 * account made through the API (plain and MQTT bearer), with their creds. Views keep the reference
 * controller's field names and the integer ids the Go SDK decodes.
 */

export interface OperatorView {
  name: string;
  publicKey: string;
  jwt: string;
}

export async function getOperatorView(): Promise<OperatorView> {
  const { name, publicKey, jwt } = await ensureNatsOperator();
  return { name, publicKey, jwt };
}

/**
 * A new operator key: the system account is signed again at once; every account (with a new key of its
 * own, so creds issued before verify nowhere), every user and every agent's NATS files follow through
 * their reconciles, which this asks for.
 */
export async function rotateOperator(): Promise<OperatorView> {
  const { name, publicKey, jwt } = await rotateNatsOperator();
  await askNatsOperatorReconcile();
  return { name, publicKey, jwt };
}

export interface AccountView {
  id: number;
  name: string;
  publicKey: string;
  jwt: string;
  isSystem: boolean;
  isLeafSystem: boolean;
}

const accountView = (row: AccountRow): AccountView => ({
  id: row.id,
  name: row.application,
  publicKey: row.publicKey,
  jwt: row.jwt,
  isSystem: false,
  isLeafSystem: false,
});

/** The system account, then every application account in force (disabled ones are not listed). */
export async function listAccountViews(): Promise<{ accounts: AccountView[] }> {
  const [system, rows] = await Promise.all([ensureSystemAccount(), listAccountRows()]);
  return {
    accounts: [
      {
        id: 1,
        name: 'SYS',
        publicKey: system.publicKey,
        jwt: system.jwt,
        isSystem: true,
        isLeafSystem: false,
      },
      ...rows.filter((row) => !row.disabled).map(accountView),
    ],
  };
}

async function requireApplication(name: string): Promise<ApplicationRow> {
  const app = await getApplication(name);
  if (!app) throw new NotFoundError(`Application with name ${name} not found`);
  return app;
}

async function requireAccount(application: string): Promise<AccountRow> {
  await requireApplication(application);
  const row = await getAccountRow(application);
  if (!row || row.disabled) {
    throw new NotFoundError(
      `Application ${application} has no NATS account: turn on its natsConfig.natsAccess, or POST /api/v3/nats/accounts/${application}`,
    );
  }
  return row;
}

export async function getAccountView(application: string): Promise<AccountView> {
  return accountView(await requireAccount(application));
}

/**
 * POST /api/v3/nats/accounts/{appName}: turns the application's NATS access on, with `natsRule` (or the
 * default account rule), and makes its account. An application that has access already is refused
 * (its natsConfig says how it is signed).
 */
export async function enableAccount(application: string, body: { natsRule?: string }): Promise<AccountView> {
  const app = await requireApplication(application);
  if (app.natsAccess) {
    throw new ConflictError(
      `Application ${application} has NATS access already; change its natsConfig (natsAccess, natsRule) instead`,
    );
  }
  if (body.natsRule) await referenceRule('account', body.natsRule, `app:${application}`, 'natsRule');
  await putApplication({
    ...app,
    natsAccess: true,
    ...(body.natsRule ? { natsRule: body.natsRule } : {}),
    updatedAt: new Date().toISOString(),
  });
  await reconcileApplicationNats(application);
  return getAccountView(application);
}

export interface UserView {
  id: number;
  name: string;
  publicKey: string;
  jwt: string;
  isBearer: boolean;
  accountName?: string;
  applicationName?: string;
  microserviceUuid?: string;
}

/** A bearer user's JWT is its password: lists never show it (its creds route does, to an admin). */
const userView = (row: UserRow, account?: boolean): UserView => ({
  id: row.id,
  name: row.name,
  publicKey: row.publicKey,
  jwt: row.kind === 'mqtt-bearer' ? '' : row.jwt,
  isBearer: row.kind === 'mqtt-bearer',
  ...(account ? { accountName: row.application, applicationName: row.application } : {}),
  ...(row.microserviceUuid ? { microserviceUuid: row.microserviceUuid } : {}),
});

export async function listAllUserViews(): Promise<{ users: UserView[] }> {
  return { users: (await listAllUserRows()).map((row) => userView(row, true)) };
}

export async function listUserViews(application: string): Promise<{ users: UserView[] }> {
  await requireAccount(application);
  return { users: (await listUserRows(application)).map((row) => userView(row)) };
}

export interface CreateUserBody {
  name: string;
  expiresIn?: number | string;
  natsRule?: string;
}

/** The expiry `expiresIn` asks for, as epoch seconds (refused when not in the future, or too far). */
function expiryOf(body: CreateUserBody): number | undefined {
  if (body.expiresIn === undefined) return undefined;
  const lifetime = lifetimeSeconds(body.expiresIn);
  if (typeof lifetime === 'string') throw new ValidationError(`Field 'expiresIn' ${lifetime}`);
  return Math.floor(Date.now() / 1000) + lifetime;
}

/** A name an API user may take: not fogbridge's own, not a user's or a microservice's of the application. */
async function checkNewUserName(application: string, name: string): Promise<void> {
  const reserved = reservedUserName(name);
  if (reserved) throw new ValidationError(`Field 'name': ${reserved}`);
  if (await getUserRow(application, name)) {
    throw new ConflictError(`NATS user ${show(name)} already exists in application ${application}`);
  }
  if (await getMicroserviceUuidByName(application, name)) {
    throw new ConflictError(
      `Field 'name': ${show(name)} is the name of microservice ${application}/${name}, whose NATS user it would be`,
    );
  }
}

/**
 * A user of an application's account (plain or MQTT bearer), made through the API. Its creds are read
 * with GET .../creds; a bearer user's JWT, its password, is in this answer.
 */
export async function createUser(
  application: string,
  body: CreateUserBody,
  bearer: boolean,
): Promise<UserView> {
  const app = await requireApplication(application);
  const expiresAt = expiryOf(body);
  if (!app.natsAccess) {
    throw new ConflictError(
      `Application ${application} has no NATS access: turn on its natsConfig.natsAccess, or POST /api/v3/nats/accounts/${application}`,
    );
  }
  await checkNewUserName(application, body.name);
  const ruleName = body.natsRule ?? (bearer ? MQTT_BEARER_USER_RULE : MICROSERVICE_USER_RULE);
  const rule = await referenceRule('user', ruleName, `user:${application}/${body.name}`, 'natsRule');
  const { account } = await convergeAccount(app, application, []);
  if (!account) throw new ConflictError(`Application ${application} has no NATS access`);
  const user = await issueUser(await openAccount(account), {
    name: body.name,
    kind: bearer ? 'mqtt-bearer' : 'api',
    rule,
    ...(expiresAt !== undefined ? { expiresAt } : {}),
    ...(bearer ? { bearer: true } : {}),
  });
  if (!user)
    throw new ConflictError(`NATS user ${show(body.name)} already exists in application ${application}`);
  // Signed by an account that a new operator re-keyed meanwhile: its reconcile reissues it.
  if ((await getAccountRow(application))?.publicKey !== account.publicKey)
    await reconcileApplicationNats(application);
  const current = (await getUserRow(application, body.name)) ?? user;
  return { ...userView(current), jwt: current.jwt };
}

/**
 * Deletes (revokes) a user made through the API. A microservice's user goes with its microservice's NATS
 * access, a leaf's with the leaf; `bearerOnly` is the MQTT bearer route, which deletes only those.
 */
export async function deleteUser(application: string, name: string, bearerOnly: boolean): Promise<void> {
  const account = await requireAccount(application);
  const user = await getUserRow(application, name);
  if (!user) throw new NotFoundError(`NATS user ${show(name)} not found in application ${application}`);
  if (bearerOnly && user.kind !== 'mqtt-bearer') {
    throw new ValidationError(
      `NATS user ${show(name)} is not an MQTT bearer user: delete it with DELETE .../users/${name}`,
    );
  }
  if (user.kind === 'microservice') {
    throw new ConflictError(
      `NATS user ${show(name)} belongs to microservice ${application}/${name}: turn off its natsConfig.natsAccess or delete the microservice`,
    );
  }
  if (user.kind === 'leaf') {
    throw new ConflictError(
      `NATS user ${show(name)} links a leaf agent into the account; fogbridge manages it`,
    );
  }
  await revokeUsers(account.application, [user]);
}

/** GET .../users/{userName}/creds: the user's creds file, base64 (an admin's only). */
export async function userCreds(application: string, name: string): Promise<{ credsBase64: string }> {
  await requireAccount(application);
  const user = await getUserRow(application, name);
  if (!user) throw new NotFoundError(`NATS user ${show(name)} not found in application ${application}`);
  const creds = credsFile(user.jwt, await openUserSeed(user));
  return { credsBase64: Buffer.from(creds, 'utf8').toString('base64') };
}
