import { reconcileApplicationNats, revokeUsers } from '../commands/nats-applications.js';
import { issueUser, specOfUser } from '../commands/nats-issuing.js';
import { findRule, ruleDigest } from '../commands/nats-rules.js';
import { leafUser, userVerifies } from '../domain/nats-accounts.js';
import { credsFile } from '../domain/nats-claims.js';
import { NATS_PATHS } from '../domain/nats-conf.js';
import { LEAF_USER_RULE } from '../domain/nats-rules.js';
import { getApplication, listMicroservicesByAgent, type MicroserviceRow } from '../store/applications.js';
import {
  type AccountRow,
  getAccountRow,
  getUserRow,
  openAccount,
  openUserSeed,
  type UserRow,
} from '../store/nats-accounts.js';

/**
 * What an agent's NATS process needs of application accounts. Its microservices with NATS access each
 * have their user (one that is missing is made by its application's reconcile). A leaf links into the
 * account of every application whose microservices it serves, as that account's leaf user
 * `leaf-<agent>`: the user is issued here (and reissued when it no longer verifies), and revoked when
 * the leaf no longer serves the application.
 */
export interface AccountLink {
  application: string;
  /** The account's public key (the remote's `account`). */
  account: string;
  /** The creds file's key in the leaf's creds mount, and its content. */
  key: string;
  creds: string;
}

/** The applications whose microservices on this agent have NATS access, and those microservices. */
async function natsMicroservices(agentUuid: string): Promise<MicroserviceRow[]> {
  return (await listMicroservicesByAgent(agentUuid)).filter((ms) => ms.natsAccess === true);
}

/** Each microservice with NATS access here has a user in its account, or its application reconciles. */
export async function repairMicroserviceUsers(agentUuid: string): Promise<MicroserviceRow[]> {
  const microservices = await natsMicroservices(agentUuid);
  for (const ms of microservices) {
    const user = await getUserRow(ms.application, ms.name);
    if (!user || user.microserviceUuid !== ms.uuid) await reconcileApplicationNats(ms.application, ms.uuid);
  }
  return microservices;
}

/**
 * A leaf's links into application accounts: one per application with NATS access (and an account in
 * force) that has a microservice with NATS access here. `previous` are the applications it linked into
 * before: their leaf users are revoked when they are no longer linked.
 */
export async function leafAccountLinks(
  agent: { uuid: string },
  token: string,
  previous: readonly string[],
): Promise<AccountLink[]> {
  const microservices = await repairMicroserviceUsers(agent.uuid);
  const applications = [...new Set(microservices.map((ms) => ms.application))].sort();
  const links: AccountLink[] = [];
  for (const application of applications) {
    const [app, account] = await Promise.all([getApplication(application), getAccountRow(application)]);
    if (!app?.natsAccess || !account || account.disabled) continue;
    const link = await linkInto(account, agent.uuid, token);
    if (link) links.push(link);
  }
  const linked = new Set(links.map((link) => link.application));
  await revokeLeafLinks(
    token,
    previous.filter((app) => !linked.has(app)),
  );
  return links;
}

/** Revokes a leaf's users in these applications' accounts (it no longer links into them). */
export async function revokeLeafLinks(token: string, applications: readonly string[]): Promise<void> {
  for (const application of applications) {
    const user = await getUserRow(application, leafUser(application, token).name);
    if (user?.kind === 'leaf') await revokeUsers(application, [user]);
  }
}

/** The leaf's link into one account: its leaf user, issued or reissued when it does not verify. */
async function linkInto(
  account: AccountRow,
  agentUuid: string,
  token: string,
): Promise<AccountLink | undefined> {
  const { name, key } = leafUser(account.application, token);
  let user: UserRow | undefined = await getUserRow(account.application, name);
  const rule = (await findRule('user', LEAF_USER_RULE))!;
  if (!user || !userVerifies(user, account) || user.ruleDigest !== ruleDigest(rule)) {
    const opened = await openAccount(account);
    const spec = user ? await specOfUser(user) : { name, kind: 'leaf' as const, rule, agentUuid };
    user =
      (await issueUser(opened, { ...spec, agentUuid }, user)) ??
      (await getUserRow(account.application, name));
  }
  if (!user) return undefined;
  return {
    application: account.application,
    account: account.publicKey,
    key,
    creds: credsFile(user.jwt, await openUserSeed(user)),
  };
}

/** Where a leaf's link creds are, in its container. */
export const linkCredentialsPath = (link: AccountLink) => `${NATS_PATHS.credsDir}/${link.key}`;
