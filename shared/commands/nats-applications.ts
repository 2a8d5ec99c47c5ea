import { config } from '../context.js';
import { planAccountUsers, type UserPlan } from '../domain/nats-accounts.js';
import { MICROSERVICE_USER_RULE } from '../domain/nats-rules.js';
import { logger } from '../log/logger.js';
import { askNatsHubReconcile, askRouterReconciles } from '../queue/publishers.js';
import {
  getApplication,
  getMicroservice,
  listMicroservicesOfApplication,
  type MicroserviceRow,
} from '../store/applications.js';
import { type ChangeFlag, raiseChangeFlags } from '../store/changes.js';
import { getNatsHub, listNatsServers } from '../store/nats.js';
import {
  bumpBundleVersion,
  deleteUserRow,
  listUserRows,
  type OpenedAccount,
  openAccount,
  type UserRow,
} from '../store/nats-accounts.js';
import { convergeAccount, issueUser, specOfUser, type UserSpec } from './nats-issuing.js';
import { findRule, ruleDigest } from './nats-rules.js';

/**
 * An application's NATS account and its users, converged from the rows that ask for them (the
 * application's `natsAccess` and account rule, its microservices' `natsAccess` and user rules, the users
 * made through the API, the operator): the account is made, re-signed or disabled; users are revoked,
 * issued and reissued (see `planAccountUsers`). Then the agents are told: the fleet's JWT directories
 * move on when the account's JWT changed, a microservice's agent re-reads its mounts (and its list, when
 * its creds appear or go), and the agents of the application's microservices reconcile their NATS
 * process when its links into the account change. Idempotent; `scope` limits the users looked at to
 * one microservice's (a change to that microservice).
 */
export async function reconcileApplicationNats(application: string, scope?: string): Promise<void> {
  const [app, users, microservices] = await Promise.all([
    getApplication(application),
    listUserRows(application),
    microservicesOf(application, scope),
  ]);
  const enabled = app?.natsAccess === true;
  const digests = await ruleDigests(users, microservices);
  const before = await convergeAccount(app, application, []);
  const plan = planAccountUsers({
    enabled,
    ...(before.account ? { account: before.account } : {}),
    users,
    microservices,
    ruleDigests: digests,
    defaultUserRule: MICROSERVICE_USER_RULE,
    ...(scope !== undefined ? { scope } : {}),
  });
  reportConflicts(application, plan);
  const revoked = [
    ...plan.revoke,
    ...plan.reissue.filter((user) => user.accountKey === before.account?.publicKey),
  ];
  const after =
    revoked.length > 0
      ? await convergeAccount(
          app,
          application,
          revoked.map((u) => u.publicKey),
        )
      : before;
  for (const user of plan.revoke) await deleteUserRow(user);
  const issued =
    after.account && enabled && plan.issue.length + plan.reissue.length > 0
      ? await issueUsers(await openAccount(after.account), plan, microservices)
      : { added: [], reissued: [] };
  await tell({
    microservices,
    accountChanged: before.changed || after.changed,
    relinked: before.relinked || after.relinked,
    gone: plan.revoke,
    ...issued,
  });
  // Its revocations gave the account a new key: its users are reissued under it.
  if (after.rekeyed && !before.rekeyed) await reconcileApplicationNats(application, scope);
}

/**
 * The application's microservices from its index, the one in `scope` as its own row says now: on
 * DynamoDB an index may still list a microservice for a moment after its row was deleted (or show its
 * access before a change), and the change being reconciled is exactly that one's.
 */
async function microservicesOf(application: string, scope: string | undefined): Promise<MicroserviceRow[]> {
  const [listed, scoped] = await Promise.all([
    listMicroservicesOfApplication(application),
    scope === undefined ? undefined : getMicroservice(scope),
  ]);
  if (scope === undefined) return listed;
  const others = listed.filter((microservice) => microservice.uuid !== scope);
  return scoped?.application === application ? [...others, scoped] : others;
}

/** Revokes users (their keys into the account's revocations), removes them and tells the agents. */
export async function revokeUsers(application: string, users: UserRow[]): Promise<void> {
  const app = await getApplication(application);
  const change = await convergeAccount(
    app,
    application,
    users.map((user) => user.publicKey),
  );
  for (const user of users) await deleteUserRow(user);
  const microservices = await listMicroservicesOfApplication(application);
  await tell({
    microservices,
    accountChanged: change.changed,
    relinked: change.relinked,
    gone: users,
    added: [],
    reissued: [],
  });
  if (change.rekeyed) await reconcileApplicationNats(application);
}

/** The digest of every rule the users and microservices name (the default user rule too). */
async function ruleDigests(users: UserRow[], microservices: MicroserviceRow[]): Promise<Map<string, string>> {
  const names = new Set([MICROSERVICE_USER_RULE, ...users.map((user) => user.rule)]);
  for (const ms of microservices) if (ms.natsRule) names.add(ms.natsRule);
  const digests = new Map<string, string>();
  for (const name of names) {
    const rule = await findRule('user', name);
    if (rule) digests.set(name, ruleDigest(rule));
  }
  return digests;
}

function reportConflicts(application: string, plan: UserPlan<UserRow, MicroserviceRow>): void {
  for (const { microservice, user } of plan.conflicts) {
    logger.warn('microservice gets no NATS user: an API user has its name', {
      application,
      microservice: microservice.name,
      user: user.name,
    });
  }
}

/** Issues the users the plan asks for (new microservice users, reissues); a lost race is skipped. */
async function issueUsers(
  account: OpenedAccount,
  plan: UserPlan<UserRow, MicroserviceRow>,
  microservices: MicroserviceRow[],
): Promise<{ added: UserRow[]; reissued: UserRow[] }> {
  const added: UserRow[] = [];
  const reissued: UserRow[] = [];
  for (const ms of plan.issue) {
    const user = await issueUser(account, await microserviceUserSpec(ms));
    if (user) added.push(user);
  }
  for (const previous of plan.reissue) {
    const ms = microservices.find((candidate) => candidate.uuid === previous.microserviceUuid);
    const spec =
      ms && previous.kind === 'microservice' ? await microserviceUserSpec(ms) : await specOfUser(previous);
    const user = await issueUser(account, spec, previous);
    if (user) reissued.push(user);
  }
  return { added, reissued };
}

async function microserviceUserSpec(ms: MicroserviceRow): Promise<UserSpec> {
  const rule =
    (await findRule('user', ms.natsRule ?? MICROSERVICE_USER_RULE)) ??
    (await findRule('user', MICROSERVICE_USER_RULE))!;
  // Its agent is recorded too: when the microservice is gone, that is where its leaf link may go.
  return { name: ms.name, kind: 'microservice', rule, microserviceUuid: ms.uuid, agentUuid: ms.agentUuid };
}

/**
 * Tells the agents what changed. A microservice's agent re-reads its mounts for its creds file, and its
 * list when the file appears or goes (its environment and mount change); agents of the application's
 * microservices with NATS access reconcile their NATS process when its links into the account may have
 * changed. When the account's JWT changed, every JWT directory moves on.
 */
async function tell(change: {
  microservices: MicroserviceRow[];
  accountChanged: boolean;
  relinked: boolean;
  gone: UserRow[];
  added: UserRow[];
  reissued: UserRow[];
}): Promise<void> {
  const flags = new Map<string, Set<ChangeFlag>>();
  const reconcile = new Set<string>();
  const agentOf = (user: UserRow) =>
    change.microservices.find((ms) => ms.uuid === user.microserviceUuid)?.agentUuid ?? user.agentUuid;
  for (const user of [...change.gone, ...change.added, ...change.reissued]) {
    const agent = agentOf(user);
    if (!agent) continue;
    addFlag(flags, agent, 'volumeMounts');
    if (user.kind === 'microservice' && !change.reissued.includes(user)) {
      // Its creds appeared or went: its environment and mounts change, and its agent's leaf links may.
      addFlag(flags, agent, 'microserviceList');
      reconcile.add(agent);
    }
    // A leaf's link user went with the account: the leaf drops the link.
    if (user.kind === 'leaf' && change.gone.includes(user)) reconcile.add(agent);
  }
  const hosting = change.microservices.filter((ms) => ms.natsAccess).map((ms) => ms.agentUuid);
  if (change.accountChanged) {
    await bumpBundleVersion();
    for (const agent of [...hosting, ...(await serverAgents())]) addFlag(flags, agent, 'volumeMounts');
    if (config().controlPlane === 'kubernetes') await askNatsHubReconcile();
  }
  if (change.relinked) for (const agent of hosting) reconcile.add(agent);
  await Promise.all([...flags].map(([agent, set]) => raiseChangeFlags(agent, [...set])));
  if (reconcile.size > 0) await askRouterReconciles(reconcile);
}

function addFlag(flags: Map<string, Set<ChangeFlag>>, agent: string, flag: ChangeFlag): void {
  flags.set(agent, (flags.get(agent) ?? new Set<ChangeFlag>()).add(flag));
}

/** The agents whose NATS servers hold every account in their JWT directory. */
async function serverAgents(): Promise<string[]> {
  const [servers, hub] = await Promise.all([listNatsServers(), getNatsHub()]);
  return [
    ...new Set([...servers.map((server) => server.agentUuid), ...(hub?.agentUuid ? [hub.agentUuid] : [])]),
  ];
}
