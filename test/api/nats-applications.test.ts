import { decode } from '@nats-io/jwt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintUserToken } from '../../infra/local/auth.js';
import { createAgent, fabricSettled, provisionAgent } from '../fixtures/world.js';
import { ApiClient, type ApiResponse, eventually } from '../support/client.js';
import type { GoStruct } from '../support/go-json.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';
import type { ScriptedAgent } from '../support/scripted-agent.js';
import { sdkClient } from '../support/sdk.js';

/**
 * Applications on the NATS fabric through the API: the calls potctl makes through the Go SDK (its
 * request bodies, its multipart parts, its structs' decoding), what an agent receives for a
 * microservice with NATS access, who may read what, concurrent creates, and bad input.
 */

// iofog-go-sdk pkg/client/types.go: the NATS types (FlexInt fields decode from numbers or strings).
const NatsOperatorResponse: GoStruct = { name: 'string', publicKey: 'string', jwt: 'string' };
const NatsAccountInfo: GoStruct = {
  id: 'int',
  name: 'string',
  publicKey: 'string',
  jwt: 'string',
  isSystem: 'bool',
  isLeafSystem: 'bool',
  applicationId: 'int',
};
const NatsUserInfo: GoStruct = {
  id: 'int',
  name: 'string',
  publicKey: 'string',
  jwt: 'string',
  isBearer: 'bool',
  accountId: 'int',
  accountName: 'string',
  applicationId: 'int',
  applicationName: 'string',
  microserviceUuid: 'string',
};
const NatsRuleInfo: GoStruct = {
  id: 'int',
  name: 'string',
  description: 'string',
  isSystem: 'bool',
  infoUrl: 'string',
  maxConnections: 'int',
  maxLeafNodeConnections: 'int',
  maxData: 'int',
  maxExports: 'int',
  maxImports: 'int',
  maxMsgPayload: 'int',
  maxSubscriptions: 'int',
  exportsAllowWildcards: 'bool',
  disallowBearer: 'bool',
  responsePermissions: 'any',
  respMax: 'int',
  respTtl: 'int',
  imports: 'any',
  exports: 'any',
  memStorage: 'int',
  diskStorage: 'int',
  streams: 'any',
  consumer: 'any',
  maxAckPending: 'int',
  memMaxStreamBytes: 'int',
  diskMaxStreamBytes: 'int',
  maxBytesRequired: 'bool',
  tieredLimits: 'any',
  maxPayload: 'int',
  bearerToken: 'bool',
  proxyRequired: 'bool',
  allowedConnectionTypes: 'any',
  src: 'any',
  times: 'any',
  timesLocation: 'string',
  pubAllow: 'any',
  pubDeny: 'any',
  subAllow: 'any',
  subDeny: 'any',
  tags: 'any',
};
const NatsConfig: GoStruct = { natsAccess: 'bool', natsRule: 'string' };
const ApplicationInfo: GoStruct = {
  name: 'string',
  id: 'int',
  natsConfig: { struct: NatsConfig },
  microservices: {
    slice: { struct: { uuid: 'string', name: 'string', natsConfig: { struct: NatsConfig } } },
  },
};

let t: TestRuntime;
let api: ApiClient;
let fogA: ScriptedAgent;
let fogB: ScriptedAgent;

/** A call as the Go SDK makes it (test/support/sdk.ts). */
let sdk: ReturnType<typeof sdkClient>;

const creds = (base64: string) => Buffer.from(base64, 'base64').toString('utf8');
const jwtOf = (credsFile: string) => /-----BEGIN NATS USER JWT-----\n(\S+)\n/.exec(credsFile)![1]!;

const provision = (uuid: string) => provisionAgent(api, t.runtime.url, uuid);

const withImage = (body: Record<string, unknown>) => ({
  images: [{ containerImage: 'example/app:1', fogTypeId: 1 }],
  ...body,
});

beforeAll(async () => {
  t = await startTestRuntime();
  api = t.api;
  sdk = sdkClient(t.runtime);
  await createAgent(api, { name: 'hub', host: 'hub.example.com' });
  fogA = await provision(await createAgent(api, { name: 'fog-a', host: '10.0.0.5' }));
  fogB = await provision(await createAgent(api, { name: 'fog-b', host: '10.0.0.6' }));
  expect(
    (await api.post('/api/v3/application', { name: 'orders', natsConfig: { natsAccess: true } })).status,
  ).toBe(201);
  const checkout = await api.post(
    '/api/v3/microservices',
    withImage({
      name: 'checkout',
      application: 'orders',
      agentName: 'fog-a',
      natsConfig: { natsAccess: true },
    }),
  );
  expect(checkout.status, checkout.text).toBe(201);
  await fabricSettled(api);
});

afterAll(async () => {
  await t?.stop();
});

describe('potctl nats through the Go SDK', () => {
  it('GetNatsOperator, ListNatsAccounts and GetNatsAccount decode; the account is signed by the operator', async () => {
    // Act
    const operator = await sdk<{ publicKey: string }>('GET', '/nats/operator', {
      decode: { struct: NatsOperatorResponse },
    });
    const list = await sdk<{ accounts: { name: string; isSystem: boolean }[] }>('GET', '/nats/accounts', {
      decode: { struct: { accounts: { slice: { struct: NatsAccountInfo } } } },
    });
    const account = await sdk<{ jwt: string; publicKey: string }>('GET', '/nats/accounts/orders', {
      decode: { struct: NatsAccountInfo },
    });

    // Assess
    expect(list.accounts.map((entry) => [entry.name, entry.isSystem])).toEqual([
      ['SYS', true],
      ['orders', false],
    ]);
    expect(decode(account.jwt)).toMatchObject({
      iss: operator.publicKey,
      sub: account.publicKey,
      name: 'orders',
    });
  });

  it('CreateNatsUser with expiresIn in seconds, ListNatsAccountUsers, GetNatsUserCreds and DeleteNatsUser', async () => {
    // Act
    const before = Math.floor(Date.now() / 1000);
    const user = await sdk<{ name: string; jwt: string }>('POST', '/nats/accounts/orders/users', {
      json: { name: 'dashboard', expiresIn: 3600 },
      decode: { struct: NatsUserInfo },
    });
    const users = await sdk<{ users: { name: string }[] }>('GET', '/nats/accounts/orders/users', {
      decode: { struct: { users: { slice: { struct: NatsUserInfo } } } },
    });
    const file = await sdk<{ credsBase64: string }>('GET', '/nats/accounts/orders/users/dashboard/creds', {
      decode: { struct: { credsBase64: 'string' } },
    });
    await sdk('DELETE', '/nats/accounts/orders/users/dashboard');
    const after = await api.get('/api/v3/nats/accounts/orders/users/dashboard/creds');

    // Assess
    const claims = decode(jwtOf(creds(file.credsBase64)));
    expect(claims.name).toBe('dashboard');
    expect(claims.exp).toBeGreaterThanOrEqual(before + 3600);
    expect(claims.exp).toBeLessThanOrEqual(before + 3600 + 60);
    expect(jwtOf(creds(file.credsBase64))).toBe(user.jwt);
    // fog-a is a leaf serving orders: it links into the account as its own user
    expect(users.users.map((entry) => entry.name).sort()).toEqual(['checkout', 'dashboard', 'leaf-fog-a']);
    expect(after.status).toBe(404);
  });

  it('CreateNatsMqttBearer answers its bearer JWT once; lists never show it; DeleteNatsMqttBearer', async () => {
    // Act
    const bearer = await sdk<{ jwt: string }>('POST', '/nats/accounts/orders/mqtt-bearer', {
      json: { name: 'sensor-1' },
      decode: { struct: NatsUserInfo },
    });
    const listed = await sdk<{ users: { name: string; jwt: string; isBearer: boolean }[] }>(
      'GET',
      '/nats/users',
      {
        decode: { struct: { users: { slice: { struct: NatsUserInfo } } } },
      },
    );
    await sdk('DELETE', '/nats/accounts/orders/mqtt-bearer/sensor-1');

    // Assess
    expect(
      decode<{ bearer_token: boolean; allowed_connection_types: string[] }>(bearer.jwt).nats,
    ).toMatchObject({
      bearer_token: true,
      allowed_connection_types: ['MQTT', 'STANDARD'],
    });
    expect(listed.users.find((entry) => entry.name === 'sensor-1')).toMatchObject({
      isBearer: true,
      jwt: '',
    });
    expect((await api.get('/api/v3/nats/accounts/orders/users')).text).not.toContain('sensor-1');
  });

  it('the account and user rules: list (system first), create from JSON and YAML, update, delete', async () => {
    // Act
    const accountRules = await sdk<{ rules: { name: string; isSystem: boolean; id: number }[] }>(
      'GET',
      '/nats/account-rules',
      {
        decode: { struct: { rules: { slice: { struct: NatsRuleInfo } } } },
      },
    );
    await sdk('POST', '/nats/account-rules', {
      json: { name: 'small', maxConnections: 10, maxData: '1m', memStorage: '64m', diskStorage: '1g' },
      decode: { struct: NatsRuleInfo },
    });
    const fromYaml = await sdk<{ maxConnections: number; memStorage: number }>(
      'POST',
      '/nats/account-rules/yaml',
      {
        multipart: {
          field: 'natsAccountRule',
          file: 'natsAccountRule.yaml',
          yaml: 'apiVersion: datasance.com/v3\nkind: NatsAccountRule\nmetadata:\n  name: tiny\nspec:\n  limits:\n    conn: 2\n    mem_storage: 1m\n',
        },
        decode: { struct: NatsRuleInfo },
      },
    );
    const updated = await sdk<{ maxConnections: number; maxData: number }>(
      'PATCH',
      '/nats/account-rules/small',
      {
        json: { maxConnections: 20 },
        decode: { struct: NatsRuleInfo },
      },
    );
    const updatedFromYaml = await sdk<{ maxConnections: number }>('PATCH', '/nats/account-rules/yaml/tiny', {
      multipart: {
        field: 'natsAccountRule',
        file: 'natsAccountRule.yaml',
        yaml: 'kind: NatsAccountRule\nmetadata:\n  name: tiny\nspec:\n  maxConnections: 3\n',
      },
      decode: { struct: NatsRuleInfo },
    });
    const userRule = await sdk<{ subDeny: string[] }>('POST', '/nats/user-rules/yaml', {
      multipart: {
        field: 'natsUserRule',
        file: 'natsUserRule.yaml',
        yaml: 'kind: NatsUserRule\nmetadata:\n  name: quiet\nspec:\n  sub:\n    deny: ["secret.>"]\n  subs: 5\n',
      },
      decode: { struct: NatsRuleInfo },
    });
    await sdk('DELETE', '/nats/account-rules/tiny');
    const userRules = await sdk<{ rules: { name: string; isSystem: boolean }[] }>('GET', '/nats/user-rules', {
      decode: { struct: { rules: { slice: { struct: NatsRuleInfo } } } },
    });

    // Assess
    expect(accountRules.rules.map((rule) => [rule.name, rule.isSystem, rule.id])).toEqual([
      ['default-system-account', true, 1],
      ['default-account', true, 2],
    ]);
    expect(fromYaml).toMatchObject({ maxConnections: 2, memStorage: 1024 * 1024 });
    expect(updated).toMatchObject({ maxConnections: 20, maxData: 1024 * 1024 });
    expect(updatedFromYaml.maxConnections).toBe(3);
    expect(userRule).toMatchObject({ subDeny: ['secret.>'], maxSubscriptions: 5 });
    expect(userRules.rules.map((rule) => [rule.name, rule.isSystem])).toEqual([
      ['default-user', true],
      ['default-mqtt-user', true],
      ['default-leaf-user', true],
      ['quiet', false],
    ]);
    expect(
      (await api.get<{ rules: { name: string }[] }>('/api/v3/nats/account-rules')).body.rules.map(
        (r) => r.name,
      ),
    ).toEqual(['default-system-account', 'default-account', 'small']);
  });

  it('EnsureNatsAccount turns an application on with a rule; its account JWT carries the rule', async () => {
    // Prepare
    expect((await api.post('/api/v3/application', { name: 'billing' })).status).toBe(201);

    // Act
    const account = await sdk<{ jwt: string }>('POST', '/nats/accounts/billing', {
      json: { natsRule: 'small' },
      decode: { struct: NatsAccountInfo },
    });
    const application = await sdk<{ natsConfig: { natsAccess: boolean; natsRule: string } }>(
      'GET',
      '/application/billing',
      {
        decode: { struct: ApplicationInfo },
      },
    );

    // Assess
    expect(application.natsConfig).toEqual({ natsAccess: true, natsRule: 'small' });
    expect(decode<{ limits: Record<string, unknown> }>(account.jwt).nats.limits).toMatchObject({
      conn: 20,
      data: 1024 * 1024,
      subs: -1,
      mem_storage: 64 * 1024 * 1024,
      disk_storage: 1024 ** 3,
      streams: -1,
    });
  });

  it('a rule change re-signs the accounts it signs', async () => {
    // Act
    await sdk('PATCH', '/nats/account-rules/small', {
      json: { maxConnections: 30 },
      decode: { struct: NatsRuleInfo },
    });

    // Assess
    await eventually(async () => {
      const { body } = await api.get<{ jwt: string }>('/api/v3/nats/accounts/billing');
      return decode<{ limits: { conn: number } }>(body.jwt).nats.limits?.conn === 30 ? true : undefined;
    }, 'the billing account to be signed with the changed rule');
  });

  it('a rule in use cannot be deleted: 409 naming what uses it', async () => {
    // Act
    const response = await api.delete('/api/v3/nats/account-rules/small');

    // Assess
    expect(response.status).toBe(409);
    expect(response.body).toEqual({
      name: 'ConflictError',
      message: 'NATS account rule "small" is used by application billing; change their rule first',
    });
  });

  it('DeployApplication from YAML with natsConfig on the application and a microservice', async () => {
    // Act
    await sdk('POST', '/application/yaml', {
      multipart: {
        field: 'application',
        file: 'application.yaml',
        yaml: `apiVersion: datasance.com/v3
kind: Application
metadata:
  name: shipping
spec:
  natsConfig:
    natsAccess: true
  microservices:
    - name: tracker
      agent:
        name: fog-b
      images:
        x86: example/tracker:1
      natsConfig:
        natsAccess: true
        natsRule: quiet
`,
      },
      decode: { map: 'any' },
    });
    const application = await sdk<{ microservices: { natsConfig: unknown }[] }>(
      'GET',
      '/application/shipping',
      {
        decode: { struct: ApplicationInfo },
      },
    );
    const users = await api.get<{ users: { name: string; jwt: string }[] }>(
      '/api/v3/nats/accounts/shipping/users',
    );

    // Assess
    expect(application.microservices[0]!.natsConfig).toEqual({ natsAccess: true, natsRule: 'quiet' });
    expect(users.body.users.map((user) => user.name)).toEqual(['tracker']);
    expect(decode<{ sub: { deny: string[] }; subs: number }>(users.body.users[0]!.jwt).nats).toMatchObject({
      sub: { deny: ['secret.>'] },
      subs: 5,
    });
  });
});

describe('what an agent receives for a microservice with NATS access', () => {
  it('its creds file mounted at /etc/nats/creds, its path in NATS_CREDS_PATH, on its own agent only', async () => {
    // Act
    await fogA.poll();
    await fogA.loadVolumeMounts();
    await fogB.loadVolumeMounts();
    const checkout = fogA.microservices.find((item) => item.name === 'checkout')!;
    const file = fogA.containerFile(checkout, '/etc/nats/creds/orders/checkout.creds');
    const account = (await api.get<{ publicKey: string }>('/api/v3/nats/accounts/orders')).body.publicKey;

    // Assess
    expect(checkout.env).toEqual([
      { key: 'NATS_CREDS_PATH', value: '/etc/nats/creds/orders/checkout.creds' },
    ]);
    expect(checkout.volumeMappings).toEqual([
      {
        hostDestination: 'nats-creds-orders-checkout',
        containerDestination: '/etc/nats/creds',
        accessMode: 'ro',
        type: 'volumeMount',
      },
    ]);
    expect(decode(jwtOf(file!))).toMatchObject({ name: 'checkout', iss: account });
    expect(file).toMatch(/-----BEGIN USER NKEY SEED-----\nSU[A-Z2-7]+\n/);
    expect(JSON.stringify(fogB.volumeMounts)).not.toContain('nats-creds-orders-checkout');
  });

  it('turning its NATS access off takes the creds, the mount and the variable away', async () => {
    // Prepare
    const uuid = fogA.microservices.find((item) => item.name === 'checkout')!.uuid;
    const users = (
      await api.get<{ users: { name: string; publicKey: string }[] }>('/api/v3/nats/accounts/orders/users')
    ).body.users;
    const checkoutKey = users.find((user) => user.name === 'checkout')!.publicKey;
    const leafKey = users.find((user) => user.name === 'leaf-fog-a')!.publicKey;

    // Act
    expect(
      (await api.patch(`/api/v3/microservices/${uuid}`, { natsConfig: { natsAccess: false } })).status,
    ).toBe(204);
    await eventually(async () => {
      await fogA.poll();
      const checkout = fogA.microservices.find((item) => item.name === 'checkout');
      return checkout && checkout.env.length === 0 ? checkout : undefined;
    }, 'checkout to lose its creds');

    // Assess
    const checkout = fogA.microservices.find((item) => item.name === 'checkout')!;
    expect(checkout.volumeMappings).toEqual([]);
    expect([...fogA.mounted.values()].map((mount) => mount.name)).not.toContain('nats-creds-orders-checkout');
    // The agent's leaf link into the account goes with the agent's own reconcile, after the microservice's
    // change it already sees: the account's users are read once that has run.
    const usersLeft = await eventually(async () => {
      const left = (await api.get<{ users: { name: string }[] }>('/api/v3/nats/accounts/orders/users')).body
        .users;
      return left.length === 0 ? left : undefined;
    }, 'the leaf link of fog-a to go');
    expect(usersLeft).toEqual([]);
    const revoked = decode<{ revocations?: Record<string, number> }>(
      (await api.get<{ jwt: string }>('/api/v3/nats/accounts/orders')).body.jwt,
    ).nats.revocations;
    expect(Object.keys(revoked ?? {})).toEqual(expect.arrayContaining([checkoutKey, leafKey]));
  });
});

describe('who may read what', () => {
  it('a viewer lists accounts and users but never reads creds; no answer carries a seed', async () => {
    // Prepare
    const viewer = new ApiClient(t.runtime.url, await mintUserToken(t.dataDir, { role: 'viewer' }));
    expect((await api.post('/api/v3/nats/accounts/orders/users', { name: 'auditor' })).status).toBe(201);

    // Act
    const answers = await Promise.all(
      [
        '/nats/accounts',
        '/nats/users',
        '/nats/accounts/orders',
        '/nats/accounts/orders/users',
        '/nats/operator',
      ].map((path) => viewer.get(`/api/v3${path}`)),
    );
    const credsRead = await viewer.get('/api/v3/nats/accounts/orders/users/auditor/creds');

    // Assess
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200]);
    // A seed is a whole token of 58 base32 characters starting SO, SA or SU; a public key (56, starting
    // O, A or U) may hold "SA" inside it and is not one.
    for (const answer of answers)
      expect(answer.text).not.toMatch(/(?<![A-Z2-7])S[OAU][A-Z2-7]{56}(?![A-Z2-7])/);
    expect(credsRead.status).toBe(403);
  });
});

describe('50 microservices with NATS access created at once in one application', () => {
  it('makes 50 users whose creds verify under one consistent account', async () => {
    // Prepare
    expect(
      (await api.post('/api/v3/application', { name: 'fleet', natsConfig: { natsAccess: true } })).status,
    ).toBe(201);

    // Act
    const created = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        api.post(
          '/api/v3/microservices',
          withImage({
            name: `worker-${i}`,
            application: 'fleet',
            agentName: 'fog-b',
            natsConfig: { natsAccess: true },
          }),
        ),
      ),
    );

    // Assess
    expect(created.map((response) => response.status)).toEqual(created.map(() => 201));
    const account = (await api.get<{ publicKey: string; jwt: string }>('/api/v3/nats/accounts/fleet')).body;
    const users = (
      await api.get<{ users: { name: string; jwt: string; publicKey: string }[] }>(
        '/api/v3/nats/accounts/fleet/users',
      )
    ).body.users;
    expect(users.map((user) => user.name).sort()).toEqual(
      Array.from({ length: 50 }, (_, i) => `worker-${i}`).sort(),
    );
    const claims = decode<{ revocations?: object }>(account.jwt);
    expect(claims.nats.revocations ?? {}).toEqual({});
    for (const user of users) {
      const file = creds(
        (await api.get<{ credsBase64: string }>(`/api/v3/nats/accounts/fleet/users/${user.name}/creds`)).body
          .credsBase64,
      );
      expect(decode(jwtOf(file))).toMatchObject({
        iss: account.publicKey,
        sub: user.publicKey,
        name: user.name,
      });
    }
  });
});

// --- Bad input --------------------------------------------------------------------------------------

interface BadCase {
  title: string;
  method: string;
  path: string;
  json?: unknown;
  yaml?: { field: string; text: string };
  status: number;
  name: string;
  message: string;
}

const RESERVED_USER =
  'is a name fogbridge gives its own NATS users (SYS, admin-hub, admin-server-*, admin-leaf-*, leaf-*)';
const badCases: BadCase[] = [
  {
    title: 'an unknown account rule on an application',
    method: 'POST',
    path: '/api/v3/application',
    json: { name: 'nope-app', natsConfig: { natsAccess: true, natsRule: 'no-such-rule' } },
    status: 400,
    name: 'ValidationError',
    message: `Field 'natsConfig.natsRule': NATS account rule "no-such-rule" not found (GET /api/v3/nats/account-rules lists them)`,
  },
  {
    title: 'an unknown user rule on a microservice',
    method: 'POST',
    path: '/api/v3/microservices',
    json: withImage({
      name: 'nope-ms',
      application: 'orders',
      agentName: 'fog-a',
      natsConfig: { natsAccess: true, natsRule: 'no-such-rule' },
    }),
    status: 400,
    name: 'ValidationError',
    message: `Field 'natsConfig.natsRule': NATS user rule "no-such-rule" not found (GET /api/v3/nats/user-rules lists them)`,
  },
  {
    title: 'rule YAML with a wrong type',
    method: 'POST',
    path: '/api/v3/nats/account-rules/yaml',
    yaml: {
      field: 'natsAccountRule',
      text: 'kind: NatsAccountRule\nmetadata:\n  name: typo\nspec:\n  limits:\n    conn: many\n',
    },
    status: 400,
    name: 'ValidationError',
    message: `Field 'spec.limits.conn' must be a number, got "many"`,
  },
  {
    title: 'a subject with a space',
    method: 'POST',
    path: '/api/v3/nats/user-rules',
    json: { name: 'spacey', subAllow: ['orders created'] },
    status: 400,
    name: 'ValidationError',
    message: `Field 'subAllow.0' must not contain whitespace, got "orders created"`,
  },
  {
    title: 'a subject with an empty token',
    method: 'POST',
    path: '/api/v3/nats/account-rules',
    json: { name: 'dotty', pubAllow: ['orders..created'] },
    status: 400,
    name: 'ValidationError',
    message: `Field 'pubAllow.0' must not have an empty token (two dots, or a dot at an end), got "orders..created"`,
  },
  {
    title: "a '>' that is not the last token",
    method: 'POST',
    path: '/api/v3/nats/user-rules',
    json: { name: 'wild', pubDeny: ['orders.>.x'] },
    status: 400,
    name: 'ValidationError',
    message: `Field 'pubDeny.0' may use '>' only as the whole last token, got "orders.>.x"`,
  },
  {
    title: 'a negative limit',
    method: 'POST',
    path: '/api/v3/nats/account-rules',
    json: { name: 'negative', maxConnections: -2 },
    status: 400,
    name: 'ValidationError',
    message: `Field 'maxConnections' must be at least -1, got -2`,
  },
  {
    title: 'a size with an unknown unit',
    method: 'POST',
    path: '/api/v3/nats/account-rules',
    json: { name: 'sized', maxData: '10q' },
    status: 400,
    name: 'ValidationError',
    message: `Field 'maxData' must be -1, a number of bytes, or a size such as 512k, 100m, 1g, got "10q"`,
  },
  {
    title: 'an expiry in the past',
    method: 'POST',
    path: '/api/v3/nats/accounts/orders/users',
    json: { name: 'late', expiresIn: -60 },
    status: 400,
    name: 'ValidationError',
    message: `Field 'expiresIn' must be in the future (a positive number of seconds), got -60`,
  },
  {
    title: 'an expiry of no time',
    method: 'POST',
    path: '/api/v3/nats/accounts/orders/users',
    json: { name: 'late', expiresIn: '0h' },
    status: 400,
    name: 'ValidationError',
    message: `Field 'expiresIn' must be in the future, got "0h"`,
  },
  {
    title: 'an expiry past three years',
    method: 'POST',
    path: '/api/v3/nats/accounts/orders/users',
    json: { name: 'late', expiresIn: '40m' },
    status: 400,
    name: 'ValidationError',
    message: `Field 'expiresIn' must be at most 3 years (26280h, 1095d, 36m), got "40m"`,
  },
  ...['admin-hub', 'SYS', 'admin-leaf-fog-a', 'admin-server-hub', 'leaf-fog-a'].map((user) => ({
    title: `the system user name ${user}`,
    method: 'POST',
    path: '/api/v3/nats/accounts/orders/users',
    json: { name: user },
    status: 400,
    name: 'ValidationError',
    message: `Field 'name': "${user}" ${RESERVED_USER}`,
  })),
  {
    title: 'a user name over 255 characters',
    method: 'POST',
    path: '/api/v3/nats/accounts/orders/users',
    json: { name: 'u'.repeat(256) },
    status: 400,
    name: 'ValidationError',
    message: `Field 'name' must be at most 255 characters, got "${'u'.repeat(76)}...`,
  },
  {
    title: 'a rule name over 255 characters',
    method: 'POST',
    path: '/api/v3/nats/user-rules',
    json: { name: 'r'.repeat(256) },
    status: 400,
    name: 'ValidationError',
    message: `Field 'name' must be at most 255 characters, got "${'r'.repeat(76)}...`,
  },
  {
    title: 'a rule name with a slash',
    method: 'POST',
    path: '/api/v3/nats/user-rules',
    json: { name: 'a/b' },
    status: 400,
    name: 'ValidationError',
    message: `Field 'name' must start with a letter or digit and hold only letters, digits, ".", "_" and "-", got "a/b"`,
  },
  {
    title: 'NATS access on a microservice whose application has none',
    method: 'POST',
    path: '/api/v3/microservices',
    json: withImage({
      name: 'lonely',
      application: 'plain',
      agentName: 'fog-a',
      natsConfig: { natsAccess: true },
    }),
    status: 400,
    name: 'ValidationError',
    message: `Field 'natsConfig.natsAccess': application plain has no NATS access; turn on the application's natsConfig.natsAccess first`,
  },
  {
    title: 'NATS access on a YAML microservice whose application document turns none on',
    method: 'PUT',
    path: '/api/v3/application/yaml/plain',
    yaml: {
      field: 'application',
      text: 'kind: Application\nmetadata:\n  name: plain\nspec:\n  microservices:\n    - name: lonely\n      agent:\n        name: fog-a\n      natsConfig:\n        natsAccess: true\n',
    },
    status: 400,
    name: 'ValidationError',
    message: `Field 'spec.microservices.0.natsConfig.natsAccess': application plain has no NATS access; set spec.natsConfig.natsAccess too`,
  },
  {
    title: 'a user of an application without NATS access',
    method: 'POST',
    path: '/api/v3/nats/accounts/plain/users',
    json: { name: 'someone' },
    status: 409,
    name: 'ConflictError',
    message:
      'Application plain has no NATS access: turn on its natsConfig.natsAccess, or POST /api/v3/nats/accounts/plain',
  },
  {
    title: 'a user named after a microservice of the application',
    method: 'POST',
    path: '/api/v3/nats/accounts/orders/users',
    json: { name: 'checkout' },
    status: 409,
    name: 'ConflictError',
    message: `Field 'name': "checkout" is the name of microservice orders/checkout, whose NATS user it would be`,
  },
  {
    title: 'a change to a system rule',
    method: 'PATCH',
    path: '/api/v3/nats/account-rules/default-account',
    json: { maxConnections: 1 },
    status: 400,
    name: 'ValidationError',
    message: 'NATS account rule "default-account" is a system rule: reserved and immutable',
  },
  {
    title: 'a rule named like a system rule',
    method: 'POST',
    path: '/api/v3/nats/user-rules',
    json: { name: 'default-user' },
    status: 400,
    name: 'ValidationError',
    message: 'NATS user rule "default-user" is a system rule: reserved and immutable',
  },
  {
    title: 'a rule that exists',
    method: 'POST',
    path: '/api/v3/nats/user-rules',
    json: { name: 'quiet' },
    status: 409,
    name: 'ConflictError',
    message: 'NATS user rule "quiet" already exists',
  },
  {
    title: 'YAML of the wrong kind',
    method: 'POST',
    path: '/api/v3/nats/account-rules/yaml',
    yaml: { field: 'natsAccountRule', text: 'kind: NatsUserRule\nmetadata:\n  name: kinda\nspec: {}\n' },
    status: 400,
    name: 'ValidationError',
    message: 'Invalid kind "NatsUserRule"',
  },
  {
    title: "a YAML change naming another rule than the path's",
    method: 'PATCH',
    path: '/api/v3/nats/user-rules/yaml/quiet',
    yaml: { field: 'natsUserRule', text: 'kind: NatsUserRule\nmetadata:\n  name: loud\nspec: {}\n' },
    status: 400,
    name: 'ValidationError',
    message: `Field 'name' ("loud") does not match the user rule in the path ("quiet"); a rule cannot be renamed`,
  },
  {
    title: 'an import from a key that is not an account',
    method: 'POST',
    path: '/api/v3/nats/account-rules',
    json: { name: 'importer', imports: [{ subject: 'prices.>', type: 'stream', account: 'UABC' }] },
    status: 400,
    name: 'ValidationError',
    message: `Field 'imports.0.account' must be an account public key (56 characters starting with A), got "UABC"`,
  },
  {
    title: 'an account of an application that does not exist',
    method: 'POST',
    path: '/api/v3/nats/accounts/ghost',
    json: {},
    status: 404,
    name: 'NotFoundError',
    message: 'Application with name ghost not found',
  },
];

function send(bad: BadCase): Promise<ApiResponse<unknown>> {
  if (bad.yaml) return api.postYaml(bad.path, bad.yaml.text, bad.method, bad.yaml.field);
  return api.request(bad.method, bad.path, { json: bad.json });
}

/** What a refused request must leave as it was. */
async function snapshot() {
  const paths = [
    '/api/v3/nats/accounts',
    '/api/v3/nats/users',
    '/api/v3/nats/account-rules',
    '/api/v3/nats/user-rules',
    '/api/v3/application',
    '/api/v3/microservices',
  ];
  const read = await Promise.all(paths.map((path) => api.get(path)));
  return read.map((response) => [response.status, response.body]);
}

describe('bad input on the NATS routes: a 4xx naming the field and the value, nothing written', () => {
  beforeAll(async () => {
    expect((await api.post('/api/v3/application', { name: 'plain' })).status).toBe(201);
  });

  it.each(badCases)('$title', async (bad) => {
    // Prepare
    const before = await snapshot();

    // Act
    const response = await send(bad);

    // Assess
    expect.soft({ status: response.status, body: response.body }).toEqual({
      status: bad.status,
      body: { name: bad.name, message: bad.message },
    });
    expect(await snapshot()).toEqual(before);
  });
});
