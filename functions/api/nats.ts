import { z } from 'zod';
import { getNatsHubView, natsBootstrap, putNatsHubFromBody } from '../../shared/commands/nats.js';
import {
  createUser,
  deleteUser,
  enableAccount,
  getAccountView,
  getOperatorView,
  listAccountViews,
  listAllUserViews,
  listUserViews,
  rotateOperator,
  userCreds,
} from '../../shared/commands/nats-accounts.js';
import { createRule, deleteRuleByName, listRules, updateRule } from '../../shared/commands/nats-rules.js';
import {
  accountRuleBody,
  accountRuleDocument,
  accountRulePatch,
  checkRuleName,
  natsName,
  parseAccountRuleDocument,
  parseUserRuleDocument,
  type RuleKind,
  userRuleBody,
  userRuleDocument,
  userRulePatch,
} from '../../shared/domain/nats-rules.js';
import { putNatsHubBody } from '../../shared/domain/nats-schema.js';
import { httpApi, jsonRequest, multipartRequest, reply, routesOf } from '../../shared/http/api.js';
import {
  natsAccountView,
  natsBootstrapView,
  natsCredsView,
  natsHubView,
  natsOperatorView,
  natsRuleView,
  natsUserView,
} from '../../shared/http/api-schemas.js';
import { examples } from '../../shared/http/examples.js';

const route = routesOf('nats');

/** POST .../users and .../mqtt-bearer: `expiresIn` in seconds (potctl) or as `24h`, `7d`, `3m`. */
const createUserBody = z.strictObject({
  name: natsName,
  expiresIn: z.union([z.number(), z.string().max(16)]).optional(),
  natsRule: natsName.optional(),
});
const ensureAccountBody = z.strictObject({ natsRule: natsName.optional() });

const accountRuleYaml = multipartRequest({
  field: 'natsAccountRule',
  document: accountRuleDocument,
  parse: parseAccountRuleDocument,
  example: examples.natsAccountRuleYaml,
});
const userRuleYaml = multipartRequest({
  field: 'natsUserRule',
  document: userRuleDocument,
  parse: parseUserRuleDocument,
  example: examples.natsUserRuleYaml,
});

/** The five routes of one kind of rule: list, create (JSON and YAML), change (JSON and YAML), delete. */
function ruleRoutes(kind: RuleKind) {
  const path = `/api/v3/nats/${kind}-rules`;
  const body = kind === 'account' ? accountRuleBody : userRuleBody;
  const patch = kind === 'account' ? accountRulePatch : userRulePatch;
  const yaml = kind === 'account' ? accountRuleYaml : userRuleYaml;
  const example = kind === 'account' ? examples.natsAccountRule : examples.natsUserRule;
  return [
    route({
      method: 'GET',
      path,
      auth: 'viewer',
      summary: `List NATS ${kind} rules (the system rules first)`,
      responses: { 200: z.object({ rules: z.array(natsRuleView) }).strict() },
      handler: async () => reply.ok(await listRules(kind)),
    }),
    route({
      method: 'POST',
      path,
      auth: 'admin',
      summary: `Create a NATS ${kind} rule`,
      request: jsonRequest(body, { example }),
      responses: { 201: natsRuleView },
      handler: async ({ body: rule }) => reply.created(await createRule(kind, rule as never)),
    }),
    route({
      method: 'POST',
      path: `${path}/yaml`,
      auth: 'admin',
      summary: `Create a NATS ${kind} rule from YAML`,
      request: yaml,
      responses: { 201: natsRuleView },
      handler: async ({ body: rule }) => reply.created(await createRule(kind, rule as never)),
    }),
    route({
      method: 'PATCH',
      path: `${path}/{ruleName}`,
      auth: 'admin',
      summary: `Change a NATS ${kind} rule (what it signs is signed again)`,
      request: jsonRequest(patch, { example: { ...example, name: undefined } }),
      responses: { 200: natsRuleView },
      handler: async ({ body: rule, param }) =>
        reply.ok(await updateRule(kind, param('ruleName'), rule as never)),
    }),
    route({
      method: 'PATCH',
      path: `${path}/yaml/{ruleName}`,
      auth: 'admin',
      summary: `Change a NATS ${kind} rule from YAML (its metadata.name names the rule)`,
      request: yaml,
      responses: { 200: natsRuleView },
      handler: async ({ body: rule, param }) => {
        checkRuleName(kind, param('ruleName'), (rule as { name: string }).name);
        return reply.ok(await updateRule(kind, param('ruleName'), rule as never));
      },
    }),
    route({
      method: 'DELETE',
      path: `${path}/{ruleName}`,
      auth: 'admin',
      summary: `Delete a NATS ${kind} rule nothing uses`,
      responses: { 204: null },
      handler: async ({ param }) => {
        await deleteRuleByName(kind, param('ruleName'));
        return reply.noContent();
      },
    }),
  ];
}

/**
 * The NATS fabric: the hub leaves dial, the operator's bootstrap of its identities, the operator and
 * its rotation, application accounts and their users, and the rules they are signed with.
 */
export const routes = [
  route({
    method: 'GET',
    path: '/api/v3/nats/hub',
    auth: 'viewer',
    summary: 'The NATS hub',
    responses: { 200: natsHubView },
    handler: async () => reply.ok(await getNatsHubView()),
  }),
  route({
    method: 'PUT',
    path: '/api/v3/nats/hub',
    auth: 'admin',
    summary: 'Register the NATS hub (0 or a missing port takes the default)',
    request: jsonRequest(putNatsHubBody, { example: examples.natsHub }),
    responses: { 200: natsHubView },
    handler: async ({ body }) => reply.ok(await putNatsHubFromBody(body)),
  }),
  route({
    method: 'GET',
    path: '/api/v3/nats/bootstrap',
    auth: 'admin',
    summary: 'The NATS operator, system account and hub user (Kubernetes control plane only; made once)',
    responses: { 200: natsBootstrapView },
    handler: async () => reply.ok(await natsBootstrap()),
  }),
  route({
    method: 'GET',
    path: '/api/v3/nats/operator',
    auth: 'viewer',
    summary: 'The NATS operator (its JWT and public key)',
    responses: { 200: natsOperatorView },
    handler: async () => reply.ok(await getOperatorView()),
  }),
  route({
    method: 'POST',
    path: '/api/v3/nats/operator/rotate',
    auth: 'admin',
    summary: 'Rotate the NATS operator: every account, user and NATS process is signed again',
    responses: { 200: natsOperatorView },
    handler: async () => reply.ok(await rotateOperator()),
  }),
  route({
    method: 'GET',
    path: '/api/v3/nats/accounts',
    auth: 'viewer',
    summary: 'List NATS accounts: the system account and each application account',
    responses: { 200: z.object({ accounts: z.array(natsAccountView) }).strict() },
    handler: async () => reply.ok(await listAccountViews()),
  }),
  route({
    method: 'GET',
    path: '/api/v3/nats/users',
    auth: 'viewer',
    summary: 'List the users of every application account',
    responses: { 200: z.object({ users: z.array(natsUserView) }).strict() },
    handler: async () => reply.ok(await listAllUserViews()),
  }),
  ...ruleRoutes('account'),
  ...ruleRoutes('user'),
  route({
    method: 'GET',
    path: '/api/v3/nats/accounts/{appName}',
    auth: 'viewer',
    summary: "An application's NATS account",
    responses: { 200: natsAccountView },
    handler: async ({ param }) => reply.ok(await getAccountView(param('appName'))),
  }),
  route({
    method: 'POST',
    path: '/api/v3/nats/accounts/{appName}',
    auth: 'admin',
    summary: "Turn an application's NATS access on (with an account rule) and make its account",
    request: jsonRequest(ensureAccountBody, { example: examples.natsEnsureAccount }),
    responses: { 201: natsAccountView },
    handler: async ({ body, param }) => reply.created(await enableAccount(param('appName'), body)),
  }),
  route({
    method: 'GET',
    path: '/api/v3/nats/accounts/{appName}/users',
    auth: 'viewer',
    summary: "The users of an application's account",
    responses: { 200: z.object({ users: z.array(natsUserView) }).strict() },
    handler: async ({ param }) => reply.ok(await listUserViews(param('appName'))),
  }),
  route({
    method: 'POST',
    path: '/api/v3/nats/accounts/{appName}/users',
    auth: 'admin',
    summary: "Create a user in an application's account (with an expiry and a user rule)",
    request: jsonRequest(createUserBody, { example: examples.natsUser }),
    responses: { 201: natsUserView },
    handler: async ({ body, param }) => reply.created(await createUser(param('appName'), body, false)),
  }),
  route({
    method: 'GET',
    path: '/api/v3/nats/accounts/{appName}/users/{userName}/creds',
    auth: 'admin',
    summary: "A user's creds file (base64)",
    responses: { 200: natsCredsView },
    handler: async ({ param }) => reply.ok(await userCreds(param('appName'), param('userName'))),
  }),
  route({
    method: 'DELETE',
    path: '/api/v3/nats/accounts/{appName}/users/{userName}',
    auth: 'admin',
    summary: 'Delete (revoke) a user made through the API',
    responses: { 204: null },
    handler: async ({ param }) => {
      await deleteUser(param('appName'), param('userName'), false);
      return reply.noContent();
    },
  }),
  route({
    method: 'POST',
    path: '/api/v3/nats/accounts/{appName}/mqtt-bearer',
    auth: 'admin',
    summary: 'Create an MQTT bearer user (its JWT is its password, in this answer)',
    request: jsonRequest(createUserBody, {
      example: { ...examples.natsUser, natsRule: 'default-mqtt-user' },
    }),
    responses: { 201: natsUserView },
    handler: async ({ body, param }) => reply.created(await createUser(param('appName'), body, true)),
  }),
  route({
    method: 'DELETE',
    path: '/api/v3/nats/accounts/{appName}/mqtt-bearer/{userName}',
    auth: 'admin',
    summary: 'Delete (revoke) an MQTT bearer user',
    responses: { 204: null },
    handler: async ({ param }) => {
      await deleteUser(param('appName'), param('userName'), true);
      return reply.noContent();
    },
  }),
];

export const handler = httpApi(routes);
