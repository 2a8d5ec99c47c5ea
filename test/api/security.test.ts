import { type KeyObject, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_AUDIENCE, LOCAL_ISSUER, mintUserToken } from '../../infra/local/auth.js';
import { documentClient } from '../../shared/store/client.js';
import { createAgent, createHub, fabricSettled } from '../fixtures/world.js';
import { ApiClient, type ApiResponse, eventually } from '../support/client.js';
import { type RuntimeProcess, spawnRuntime, waitForExit } from '../support/process.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';
import { loadEdgeletKey, ScriptedAgent } from '../support/scripted-agent.js';

/**
 * Authentication and authorization through real HTTP against the local runtime: every refused request
 * gets its exact status and `{name, message}` body and changes nothing; credentials never show up in
 * responses that are not meant to carry them, nor in the runtime's output.
 */

interface SigningKeyFile {
  kid: string;
  privateJwk: JWK;
  publicJwk: JWK;
}
interface ErrorBody {
  name: string;
  message: string;
}
type Snapshot = { services: unknown; fogs: unknown };
type ProvisioningKey = { key: string; expirationTime: number };
type Provisioned = { uuid: string; privateKey: string; namespace: string };

const SERVICES = '/api/v3/services';
const AGENT_CHANGES = '/api/v3/agent/config/changes';
const AGENT_MICROSERVICES = '/api/v3/agent/microservices';
const PROVISION = '/api/v3/agent/provision';
/** A valid create body: a write attempt with it must be refused, not rejected for its content. */
const SNEAKY = { name: 'sneaky', type: 'external', resource: '203.0.113.10', targetPort: 443 };

const INVALID_TOKEN: ErrorBody = { name: 'AuthenticationError', message: 'Invalid or expired token' };
const MISSING_HEADER: ErrorBody = {
  name: 'AuthenticationError',
  message: 'Missing Authorization header (expected "Bearer <token>")',
};
const NOT_BEARER: ErrorBody = {
  name: 'AuthenticationError',
  message: 'Authorization header is not "Bearer <JWT>"',
};
const TOO_LARGE: ErrorBody = { name: 'AuthenticationError', message: 'Authorization header is too large' };
const AGENT_AUTH_FAILED: ErrorBody = { name: 'AuthenticationError', message: 'authorization failed' };
const NEEDS_ADMIN: ErrorBody = { name: 'ForbiddenError', message: 'This request needs the admin role' };
const INVALID_PROVISIONING_KEY: ErrorBody = { name: 'NotFoundError', message: 'Invalid provisioning key' };
const EXPIRED_PROVISIONING_KEY: ErrorBody = {
  name: 'AuthenticationError',
  message: 'Expired provisioning key',
};

let t: TestRuntime;
let api: ApiClient;
/** No default token: every request sets (or omits) its own Authorization header. */
let anonymous: ApiClient;
const uuids = { hub: '', a: '', b: '', c: '' };
let agentA: ScriptedAgent;
let agentB: ScriptedAgent;
let microserviceOnA = '';
let microserviceOnB = '';
/** Agent A's provisioned private key, for tokens the scripted agent would not sign. */
let privateKeyOfA: KeyObject;
/** Every credential handed out or used in this suite, by label, for the leak checks. */
const secrets: { label: string; value: string }[] = [];

const nowSeconds = () => Math.floor(Date.now() / 1000);
const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const signingKey = (dataDir: string) =>
  JSON.parse(readFileSync(join(dataDir, 'auth', 'signing-key.json'), 'utf8')) as SigningKeyFile;

/** A user token as an attacker would build it; by default everything about it is right. */
async function userToken(
  key: Parameters<SignJWT['sign']>[0],
  options: { alg?: string; issuer?: string; audience?: string; iat?: number | null; exp?: number } = {},
): Promise<string> {
  const iat = options.iat === null ? undefined : (options.iat ?? nowSeconds());
  const token = new SignJWT({ roles: ['admin'] })
    .setProtectedHeader({ alg: options.alg ?? 'EdDSA', kid: signingKey(t.dataDir).kid, typ: 'JWT' })
    .setIssuer(options.issuer ?? LOCAL_ISSUER)
    .setAudience(options.audience ?? LOCAL_AUDIENCE)
    .setSubject('mallory')
    .setExpirationTime(options.exp ?? (iat ?? nowSeconds()) + 3600);
  if (iat !== undefined) token.setIssuedAt(iat);
  return token.sign(key);
}

/** The suite's provisioning key lifetime. */
const PROVISIONING_KEY_TTL_SECONDS = 5;

/** USER_TOKEN_MAX_LIFETIME_SECONDS by default: seven days. */
const USER_TOKEN_MAX_LIFETIME = 7 * 24 * 3600;

const localPrivateKey = async () => importJWK(signingKey(t.dataDir).privateJwk, 'EdDSA');

async function snapshot(): Promise<Snapshot> {
  const services = await api.get(SERVICES);
  const fogs = await api.get('/api/v3/iofog-list');
  expect(services.status).toBe(200);
  expect(fogs.status).toBe(200);
  return { services: services.body, fogs: fogs.body };
}

/** Nothing changed since `before`, and the write attempt left no `sneaky` service behind. */
async function assertUnchanged(before: Snapshot): Promise<void> {
  expect(await snapshot()).toEqual(before);
  expect((await api.get(`${SERVICES}/sneaky`)).status).toBe(404);
}

const outcome = (response: ApiResponse) => ({ status: response.status, body: response.body });

const withAuthorization = (authorization: string | undefined): Record<string, string> =>
  authorization === undefined ? {} : { authorization };

async function issueKey(uuid: string): Promise<ProvisioningKey> {
  const response = await api.get<ProvisioningKey>(`/api/v3/iofog/${uuid}/provisioning-key`);
  expect(response.status).toBe(200);
  secrets.push({ label: `provisioning key of ${uuid}`, value: response.body.key });
  return response.body;
}

/** Issues a key and provisions with it at once (the suite runs with a 5 s key lifetime). */
async function provisionedAgent(uuid: string): Promise<{ agent: ScriptedAgent; privateKey: KeyObject }> {
  const agent = new ScriptedAgent(t.runtime.url);
  const { key } = await issueKey(uuid);
  const provisioned = await agent.provision(key);
  secrets.push({ label: `private key of ${uuid}`, value: String(provisioned.privateKey) });
  return { agent, privateKey: loadEdgeletKey(String(provisioned.privateKey)) };
}

/** A token the agent signed, remembered as a secret. */
async function agentToken(
  agent: ScriptedAgent,
  overrides: Parameters<ScriptedAgent['token']>[0] = {},
): Promise<string> {
  const token = await agent.token(overrides);
  secrets.push({ label: `agent token of ${agent.uuid}`, value: token });
  return token;
}

const asAgent = (token: string) => new ApiClient(t.runtime.url, token);

beforeAll(async () => {
  // Keys live 5 s: long enough to provision with at once on a loaded machine, short enough to wait out.
  t = await startTestRuntime({ env: { PROVISIONING_KEY_TTL_SECONDS: String(PROVISIONING_KEY_TTL_SECONDS) } });
  api = t.api;
  anonymous = new ApiClient(t.runtime.url);
  secrets.push({ label: 'admin token', value: t.runtime.adminToken! });
  // The first agent of an empty cluster becomes the system agent and the default router (the hub).
  uuids.hub = await createHub(api);
  uuids.a = await createAgent(api, { name: 'edge-a', host: '10.0.0.11' });
  uuids.b = await createAgent(api, { name: 'edge-b', host: '10.0.0.12' });
  uuids.c = await createAgent(api, { name: 'edge-c', host: '10.0.0.13' });
  expect((await api.post('/api/v3/application', { name: 'orders' })).status).toBe(201);
  // With an image for the agents' architecture (they provision as amd64), so each agent runs its own.
  const images = [{ containerImage: 'ghcr.io/example/app:1.0', fogTypeId: 1 }];
  const onA = await api.post<{ uuid: string }>('/api/v3/microservices', {
    name: 'collector',
    application: 'orders',
    agentName: 'edge-a',
    images,
  });
  const onB = await api.post<{ uuid: string }>('/api/v3/microservices', {
    name: 'worker',
    application: 'orders',
    agentName: 'edge-b',
    images,
  });
  expect([onA.status, onB.status]).toEqual([201, 201]);
  microserviceOnA = onA.body.uuid;
  microserviceOnB = onB.body.uuid;
  // One settled service, so "nothing changed" compares something real.
  expect(
    (
      await api.post(SERVICES, {
        name: 'vendor',
        type: 'external',
        resource: '198.51.100.7',
        targetPort: 443,
      })
    ).status,
  ).toBe(201);
  await eventually(
    async () =>
      (await api.get<{ provisioningStatus: string }>(`${SERVICES}/vendor`)).body.provisioningStatus ===
      'ready'
        ? true
        : undefined,
    'service vendor to be ready',
  );
  ({ agent: agentA, privateKey: privateKeyOfA } = await provisionedAgent(uuids.a));
  ({ agent: agentB } = await provisionedAgent(uuids.b));
  await fabricSettled(api);
});

afterAll(async () => {
  await t?.stop();
});

describe('user tokens that must not verify', () => {
  interface BadCredential {
    title: string;
    authorization: () => Promise<string | undefined>;
    expected: ErrorBody;
  }

  const cases: BadCredential[] = [
    { title: 'no Authorization header', authorization: async () => undefined, expected: MISSING_HEADER },
    {
      title: 'an expired token signed with the local key',
      authorization: async () =>
        `Bearer ${await userToken(await localPrivateKey(), { iat: nowSeconds() - 7200, exp: nowSeconds() - 3600 })}`,
      expected: INVALID_TOKEN,
    },
    {
      title: 'a token with the wrong issuer',
      authorization: async () =>
        `Bearer ${await userToken(await localPrivateKey(), { issuer: 'https://evil.example.com' })}`,
      expected: INVALID_TOKEN,
    },
    {
      title: 'a token with the wrong audience',
      authorization: async () =>
        `Bearer ${await userToken(await localPrivateKey(), { audience: 'someone-else' })}`,
      expected: INVALID_TOKEN,
    },
    {
      title: 'an alg:none token with an empty signature',
      authorization: async () => {
        const iat = nowSeconds();
        const header = { alg: 'none', typ: 'JWT' };
        const payload = {
          iss: LOCAL_ISSUER,
          aud: LOCAL_AUDIENCE,
          sub: 'mallory',
          roles: ['admin'],
          iat,
          exp: iat + 3600,
        };
        return `Bearer ${b64url(header)}.${b64url(payload)}.`;
      },
      expected: NOT_BEARER,
    },
    {
      title: 'an alg:none token with a junk signature',
      authorization: async () => {
        const iat = nowSeconds();
        const header = { alg: 'none', typ: 'JWT', kid: signingKey(t.dataDir).kid };
        const payload = {
          iss: LOCAL_ISSUER,
          aud: LOCAL_AUDIENCE,
          sub: 'mallory',
          roles: ['admin'],
          iat,
          exp: iat + 3600,
        };
        return `Bearer ${b64url(header)}.${b64url(payload)}.AAAA`;
      },
      expected: INVALID_TOKEN,
    },
    {
      title: 'an HS256 token keyed with the JSON text of the public JWK',
      authorization: async () =>
        `Bearer ${await userToken(Buffer.from(JSON.stringify(signingKey(t.dataDir).publicJwk)), { alg: 'HS256' })}`,
      expected: INVALID_TOKEN,
    },
    {
      title: 'an HS256 token keyed with the JSON text of the configured public key set',
      authorization: async () =>
        `Bearer ${await userToken(Buffer.from(JSON.stringify({ keys: [signingKey(t.dataDir).publicJwk] })), { alg: 'HS256' })}`,
      expected: INVALID_TOKEN,
    },
    {
      title: 'an HS256 token keyed with the raw x bytes of the public key',
      authorization: async () =>
        `Bearer ${await userToken(Buffer.from(signingKey(t.dataDir).publicJwk.x!, 'base64url'), { alg: 'HS256' })}`,
      expected: INVALID_TOKEN,
    },
    {
      title: 'a token living seven days and a second (longer than USER_TOKEN_MAX_LIFETIME_SECONDS)',
      authorization: async () =>
        `Bearer ${await userToken(await localPrivateKey(), { exp: nowSeconds() + USER_TOKEN_MAX_LIFETIME + 1 })}`,
      expected: INVALID_TOKEN,
    },
    {
      title: 'a token without iat that expires in ten years',
      authorization: async () =>
        `Bearer ${await userToken(await localPrivateKey(), { iat: null, exp: nowSeconds() + 10 * 365 * 24 * 3600 })}`,
      expected: INVALID_TOKEN,
    },
    {
      title: 'a token issued a day in the future (iat = now + 1 day, exp = iat + 1 h)',
      authorization: async () =>
        `Bearer ${await userToken(await localPrivateKey(), { iat: nowSeconds() + 24 * 3600 })}`,
      expected: INVALID_TOKEN,
    },
    {
      title: 'a token signed by another Ed25519 key with the right issuer, audience and kid',
      authorization: async () => {
        const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
        return `Bearer ${await userToken(privateKey)}`;
      },
      expected: INVALID_TOKEN,
    },
  ];

  it.each(cases)(
    '$title: 401 on a read and on a write; nothing changes',
    async ({ authorization, expected }) => {
      // Prepare
      const headers = withAuthorization(await authorization());
      if (headers.authorization)
        secrets.push({ label: 'forged user token', value: headers.authorization.replace(/^Bearer /, '') });
      const before = await snapshot();

      // Act
      const write = await anonymous.request('POST', SERVICES, { json: SNEAKY, headers });
      const read = await anonymous.request('GET', SERVICES, { headers });

      // Assess
      expect(outcome(write)).toEqual({ status: 401, body: expected });
      expect(outcome(read)).toEqual({ status: 401, body: expected });
      await assertUnchanged(before);
    },
  );

  it.each([
    ['living one hour', {}],
    ['living exactly seven days', { exp: nowSeconds() + USER_TOKEN_MAX_LIFETIME }],
    ['without iat, expiring in six days', { iat: null, exp: nowSeconds() + 6 * 24 * 3600 }],
  ] as const)(
    'a token crafted the same way with the local key, %s, is accepted (the refusals above are not vacuous)',
    async (_title, options) => {
      // Prepare
      const token = await userToken(await localPrivateKey(), options);
      const before = await snapshot();

      // Act
      const read = await anonymous.request('GET', SERVICES, {
        headers: { authorization: `Bearer ${token}` },
      });

      // Assess
      expect(read.status).toBe(200);
      expect(read.body).toEqual(before.services);
      await assertUnchanged(before);
    },
  );

  it('a token accepted once is refused after its expiry (an accepted token is not trusted past it)', async () => {
    // Prepare
    const exp = nowSeconds() + 2;
    const headers = { authorization: `Bearer ${await userToken(await localPrivateKey(), { exp })}` };
    const accepted = await anonymous.request('GET', SERVICES, { headers });
    while (nowSeconds() <= exp) await new Promise((resolve) => setTimeout(resolve, 250));

    // Act
    const afterExpiry = await anonymous.request('GET', SERVICES, { headers });

    // Assess
    expect(accepted.status).toBe(200);
    expect(outcome(afterExpiry)).toEqual({ status: 401, body: INVALID_TOKEN });
  });
});

describe('the viewer role', () => {
  let viewer: ApiClient;

  beforeAll(async () => {
    const token = await mintUserToken(t.dataDir, { role: 'viewer', subject: 'vera' });
    secrets.push({ label: 'viewer token', value: token });
    viewer = new ApiClient(t.runtime.url, token);
  });

  it.each([
    { method: 'POST', path: SERVICES, json: SNEAKY },
    { method: 'PATCH', path: `${SERVICES}/vendor`, json: { tags: ['hijacked'] } },
    { method: 'DELETE', path: `${SERVICES}/vendor`, json: undefined },
    { method: 'POST', path: `${SERVICES}/vendor/reconcile`, json: undefined },
    { method: 'POST', path: '/api/v3/iofog', json: { name: 'rogue', host: '203.0.113.99' } },
    { method: 'PATCH', path: '/api/v3/iofog/{a}', json: { tags: ['service.iofog.org/tag: all'] } },
    { method: 'DELETE', path: '/api/v3/iofog/{b}', json: undefined },
  ])('$method $path: 403 needs the admin role; nothing changes', async ({ method, path, json }) => {
    // Prepare
    const before = await snapshot();

    // Act
    const response = await viewer.request(method, path.replace('{a}', uuids.a).replace('{b}', uuids.b), {
      json,
    });

    // Assess
    expect(outcome(response)).toEqual({ status: 403, body: NEEDS_ADMIN });
    await assertUnchanged(before);
  });

  it('GET /api/v3/services: 200 with what the admin sees', async () => {
    // Prepare
    const before = await snapshot();

    // Act
    const response = await viewer.get(SERVICES);

    // Assess
    expect(response.status).toBe(200);
    expect(response.body).toEqual(before.services);
    await assertUnchanged(before);
  });

  it('GET /api/v3/iofog/{uuid}/provisioning-key: 403, a GET that hands out a credential is admin only', async () => {
    // Prepare
    const before = await snapshot();

    // Act
    const response = await viewer.get(`/api/v3/iofog/${uuids.c}/provisioning-key`);

    // Assess
    expect(outcome(response)).toEqual({ status: 403, body: NEEDS_ADMIN });
    expect(response.text).not.toContain('"key"');
    await assertUnchanged(before);
  });
});

describe('agent tokens', () => {
  it('a replayed jti: the first use is 200, the same token again and a new token with that jti are 401', async () => {
    // Prepare
    const jti = randomUUID();
    const token = await agentToken(agentA, { jti });
    const before = await snapshot();

    // Act
    const first = await asAgent(token).get(AGENT_CHANGES);
    const replay = await asAgent(token).get(AGENT_CHANGES);
    const resigned = await asAgent(await agentToken(agentA, { jti })).get(AGENT_CHANGES);

    // Assess
    expect(first.status).toBe(200);
    expect(outcome(replay)).toEqual({ status: 401, body: AGENT_AUTH_FAILED });
    expect(outcome(resigned)).toEqual({ status: 401, body: AGENT_AUTH_FAILED });
    await assertUnchanged(before);
  });

  it.each([601, 3600])('a token living %i s (above 600 s): 401', async (lifetimeSeconds) => {
    // Prepare
    const token = await agentToken(agentA, { lifetimeSeconds });
    const before = await snapshot();

    // Act
    const response = await asAgent(token).get(AGENT_CHANGES);

    // Assess
    expect(outcome(response)).toEqual({ status: 401, body: AGENT_AUTH_FAILED });
    await assertUnchanged(before);
  });

  it('a token dated a day ahead (iat = now + 1 day, exp = iat + 60 s) lives far above 600 s: 401', async () => {
    // Prepare: correctly signed by A with a fresh jti; only its dates are wrong
    const iat = nowSeconds() + 24 * 3600;
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'EdDSA' })
      .setSubject(uuids.a)
      .setIssuedAt(iat)
      .setExpirationTime(iat + 60)
      .setJti(randomUUID())
      .sign(privateKeyOfA);
    secrets.push({ label: 'future-dated agent token of edge-a', value: token });
    const before = await snapshot();

    // Act
    const response = await asAgent(token).get(AGENT_CHANGES);

    // Assess
    expect(outcome(response)).toEqual({ status: 401, body: AGENT_AUTH_FAILED });
    await assertUnchanged(before);
  });

  it("agent A signing a token with sub = agent B: 401 on B's routes", async () => {
    // Prepare
    const token = await agentToken(agentA, { subject: uuids.b });
    const before = await snapshot();

    // Act
    const changes = await asAgent(token).get(AGENT_CHANGES);
    const microservices = await asAgent(token).get(AGENT_MICROSERVICES);

    // Assess
    expect(outcome(changes)).toEqual({ status: 401, body: AGENT_AUTH_FAILED });
    expect(outcome(microservices)).toEqual({ status: 401, body: AGENT_AUTH_FAILED });
    await assertUnchanged(before);
  });

  it.each([
    { what: "B's microservice", uuid: () => microserviceOnB },
    { what: "B's router microservice", uuid: () => `${uuids.b}-router` },
  ])('agent A asking for $what: 404, and it is not in A’s list', async ({ uuid }) => {
    // Prepare
    const before = await snapshot();
    const target = uuid();

    // Act
    const response = await asAgent(await agentToken(agentA)).get(`${AGENT_MICROSERVICES}/${target}`);
    const listOfA = await asAgent(await agentToken(agentA)).get<{ microservices: { uuid: string }[] }>(
      AGENT_MICROSERVICES,
    );
    const listOfB = await asAgent(await agentToken(agentB)).get<{ microservices: { uuid: string }[] }>(
      AGENT_MICROSERVICES,
    );

    // Assess
    expect(outcome(response)).toEqual({
      status: 404,
      body: { name: 'NotFoundError', message: `Microservice with uuid ${target} not found` },
    });
    expect(listOfA.status).toBe(200);
    const seenByA = listOfA.body.microservices.map((microservice) => microservice.uuid);
    expect(seenByA).toContain(microserviceOnA);
    expect(seenByA).not.toContain(target);
    // The uuid is real: B sees it.
    expect(listOfB.body.microservices.map((microservice) => microservice.uuid)).toContain(target);
    await assertUnchanged(before);
  });

  it.each([
    { method: 'GET', path: AGENT_CHANGES, json: undefined },
    { method: 'PATCH', path: AGENT_CHANGES, json: { lastUpdated: 0 } },
    { method: 'GET', path: AGENT_MICROSERVICES, json: undefined },
  ])(
    'the admin user token on the agent route $method $path: 401 authorization failed',
    async ({ method, path, json }) => {
      // Prepare
      const before = await snapshot();

      // Act
      const response = await api.request(method, path, { json });

      // Assess
      expect(outcome(response)).toEqual({ status: 401, body: AGENT_AUTH_FAILED });
      await assertUnchanged(before);
    },
  );

  it.each([
    { method: 'GET', path: SERVICES, json: undefined },
    { method: 'POST', path: SERVICES, json: SNEAKY },
    { method: 'GET', path: '/api/v3/iofog-list', json: undefined },
  ])('an agent token on the user route $method $path: 401', async ({ method, path, json }) => {
    // Prepare
    const before = await snapshot();
    const token = await agentToken(agentA);

    // Act
    const response = await asAgent(token).request(method, path, { json });

    // Assess
    expect(outcome(response)).toEqual({ status: 401, body: INVALID_TOKEN });
    await assertUnchanged(before);
  });
});

describe('provisioning', () => {
  it('GET /api/v3/iofog/{uuid}/provisioning-key (admin): 200 {key, expirationTime}', async () => {
    // Prepare
    const before = await snapshot();
    const issuedAfter = Date.now();

    // Act
    const response = await api.get<ProvisioningKey>(`/api/v3/iofog/${uuids.c}/provisioning-key`);

    // Assess
    expect(response.status).toBe(200);
    secrets.push({ label: 'provisioning key of edge-c', value: response.body.key });
    expect(Object.keys(response.body).sort()).toEqual(['expirationTime', 'key']);
    expect(response.body.key).toEqual(expect.any(String));
    expect(response.body.key.length).toBeGreaterThanOrEqual(16);
    expect(response.body.expirationTime).toEqual(expect.any(Number));
    expect(response.body.expirationTime).toBeGreaterThan(issuedAfter);
    await assertUnchanged(before);
  });

  it('POST /api/v3/agent/provision {type: 1, key}: 200 {uuid, privateKey, namespace}; the key works for the agent', async () => {
    // Prepare
    const { key } = await issueKey(uuids.c);

    // Act
    const response = await anonymous.post<Provisioned>(PROVISION, { type: 1, key });

    // Assess
    expect(response.status).toBe(200);
    secrets.push({ label: 'private key of edge-c', value: response.body.privateKey });
    expect(Object.keys(response.body).sort()).toEqual(['namespace', 'privateKey', 'uuid']);
    expect(response.body.uuid).toBe(uuids.c);
    expect(response.body.namespace).toBe('default');
    // Edgelet's format: base64 of the JSON Web Key of the Ed25519 key pair
    const jwk = JSON.parse(Buffer.from(response.body.privateKey, 'base64').toString('utf8'));
    expect(Object.keys(jwk).sort()).toEqual(['crv', 'd', 'kty', 'x']);
    expect(jwk).toMatchObject({ kty: 'OKP', crv: 'Ed25519' });
    const privateKey = loadEdgeletKey(response.body.privateKey);
    expect(privateKey.asymmetricKeyType).toBe('ed25519');
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'EdDSA' })
      .setSubject(uuids.c)
      .setIssuedAt()
      .setExpirationTime('60s')
      .setJti(randomUUID())
      .sign(privateKey);
    secrets.push({ label: 'agent token of edge-c', value: token });
    expect((await asAgent(token).get(AGENT_CHANGES)).status).toBe(200);
  });

  it('the same key a second time: 404, single use', async () => {
    // Prepare
    const { key } = await issueKey(uuids.c);
    expect((await anonymous.post(PROVISION, { type: 1, key })).status).toBe(200);
    const before = await snapshot();

    // Act
    const again = await anonymous.post(PROVISION, { type: 1, key });

    // Assess
    expect(outcome(again)).toEqual({ status: 404, body: INVALID_PROVISIONING_KEY });
    await assertUnchanged(before);
  });

  it('a key issued before a newer one for the same agent: 404; the newer key works', async () => {
    // Prepare
    const older = await issueKey(uuids.c);
    const newer = await issueKey(uuids.c);
    const before = await snapshot();

    // Act
    const retired = await anonymous.post(PROVISION, { type: 1, key: older.key });
    const current = await anonymous.post(PROVISION, { type: 1, key: newer.key });

    // Assess
    expect(outcome(retired)).toEqual({ status: 404, body: INVALID_PROVISIONING_KEY });
    expect(current.status).toBe(200);
    await assertUnchanged(before);
  });

  it('an unknown key: 404', async () => {
    // Prepare
    const before = await snapshot();

    // Act
    const response = await anonymous.post(PROVISION, { type: 1, key: 'UnknownKey0123456789abcd' });

    // Assess
    expect(outcome(response)).toEqual({ status: 404, body: INVALID_PROVISIONING_KEY });
    await assertUnchanged(before);
  });

  it('an expired key: 401, and it is consumed (404 afterwards)', async () => {
    // Prepare: wait out the suite's key lifetime
    const { key } = await issueKey(uuids.c);
    await new Promise((resolve) => setTimeout(resolve, PROVISIONING_KEY_TTL_SECONDS * 1000 + 500));
    const before = await snapshot();

    // Act
    const expired = await anonymous.post(PROVISION, { type: 1, key });
    const again = await anonymous.post(PROVISION, { type: 1, key });

    // Assess
    expect(outcome(expired)).toEqual({ status: 401, body: EXPIRED_PROVISIONING_KEY });
    expect(outcome(again)).toEqual({ status: 404, body: INVALID_PROVISIONING_KEY });
    await assertUnchanged(before);
  });
});

/**
 * What the store is asked while a request runs: every DynamoDB command the runtime sends, by name and
 * with its input as JSON, seen from outside the product code through the SDK's middleware stack.
 */
async function storeCallsDuring(work: () => Promise<unknown>): Promise<{ command: string; input: string }[]> {
  const calls: { command: string; input: string }[] = [];
  const client = t.inRuntime(() => documentClient());
  client.middlewareStack.add(
    (next, context) => async (args) => {
      calls.push({ command: String(context.commandName), input: JSON.stringify(args.input) });
      return next(args);
    },
    { step: 'initialize', name: 'securityTestStoreSpy' },
  );
  try {
    await work();
  } finally {
    client.middlewareStack.remove('securityTestStoreSpy');
  }
  return calls;
}

describe('forged agent tokens never reach the store with what they claim', () => {
  const unsigned = (claims: Record<string, unknown>) =>
    `${b64url({ alg: 'EdDSA', typ: 'JWT' })}.${b64url(claims)}.${Buffer.from('x'.repeat(64)).toString('base64url')}`;

  it.each([
    [
      'an unsigned token whose sub is 3,000 characters',
      () => unsigned({ sub: 's'.repeat(3000), jti: randomUUID(), iat: nowSeconds(), exp: nowSeconds() + 60 }),
      's'.repeat(3000),
    ],
    [
      'an unsigned token whose sub is not an agent uuid',
      () => unsigned({ sub: 'AGENT#x/../', jti: randomUUID(), iat: nowSeconds(), exp: nowSeconds() + 60 }),
      'AGENT#x/../',
    ],
    [
      'a token signed by agent A whose jti is 3,000 characters',
      () => agentToken(agentA, { jti: 'j'.repeat(3000) }),
      'j'.repeat(3000),
    ],
  ])('%s: 401, and the store sees none of it (zero calls)', async (_title, token, claimed) => {
    // Prepare
    const authorization = `Bearer ${await token()}`;
    let response: ApiResponse | undefined;

    // Act
    const calls = await storeCallsDuring(async () => {
      response = await anonymous.request('GET', AGENT_CHANGES, { headers: { authorization } });
    });

    // Assess
    expect(outcome(response!)).toEqual({ status: 401, body: AGENT_AUTH_FAILED });
    expect(calls.filter((call) => call.input.includes(claimed.slice(0, 200)))).toEqual([]);
  });

  it("a well-formed token for agent A signed with another key: 401 after one read of A's public key; nothing written", async () => {
    // Prepare
    const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const jti = randomUUID();
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: 'EdDSA' })
      .setSubject(uuids.a)
      .setIssuedAt()
      .setExpirationTime('60s')
      .setJti(jti)
      .sign(privateKey);
    let response: ApiResponse | undefined;

    // Act
    const calls = await storeCallsDuring(async () => {
      response = await anonymous.request('GET', AGENT_CHANGES, {
        headers: { authorization: `Bearer ${forged}` },
      });
    });

    // Assess
    expect(outcome(response!)).toEqual({ status: 401, body: AGENT_AUTH_FAILED });
    expect(calls.filter((call) => call.input.includes(uuids.a))).toEqual([
      { command: 'GetItemCommand', input: expect.stringContaining(`AGENTKEY#${uuids.a}`) },
    ]);
    expect(calls.filter((call) => call.input.includes(jti))).toEqual([]);
  });

  it('a good token from agent A whose acknowledged lastUpdated is a 10,000-deep array: 400 naming the field', async () => {
    // Prepare
    const token = await agentToken(agentA);
    const deep = `${'['.repeat(10_000)}1${']'.repeat(10_000)}`;

    // Act
    const response = await asAgent(token).request('PATCH', AGENT_CHANGES, {
      body: `{"lastUpdated":${deep}}`,
      headers: { 'content-type': 'application/json' },
    });
    const status = await anonymous.get<{ status: string }>('/api/v3/status');

    // Assess
    expect(outcome(response)).toEqual({
      status: 400,
      body: {
        name: 'ValidationError',
        message: expect.stringMatching(/^Field 'lastUpdated' .*\[\[\[\[\[\[\[\[\[\.\.\.\]\]\]\]\]\]\]\]\]/),
      },
    });
    expect(status.body.status).toBe('online');
  });
});

describe('malformed Authorization headers', () => {
  const garbage = [
    { title: 'a 9 KiB header carrying a validly signed admin token', value: 'oversized', user: TOO_LARGE },
    { title: 'Bearer !!!', value: 'Bearer !!!', user: NOT_BEARER },
    { title: 'Basic abc', value: 'Basic abc', user: NOT_BEARER },
    { title: 'Bearer a.b', value: 'Bearer a.b', user: NOT_BEARER },
  ];

  /** The oversized header is a real admin token padded with a claim, so only its size is wrong. */
  async function headerValue(value: string): Promise<string> {
    if (value !== 'oversized') return value;
    const iat = nowSeconds();
    const token = await new SignJWT({ roles: ['admin'], pad: 'p'.repeat(7 * 1024) })
      .setProtectedHeader({ alg: 'EdDSA', kid: signingKey(t.dataDir).kid, typ: 'JWT' })
      .setIssuer(LOCAL_ISSUER)
      .setAudience(LOCAL_AUDIENCE)
      .setSubject('mallory')
      .setIssuedAt(iat)
      .setExpirationTime(iat + 3600)
      .sign(await localPrivateKey());
    const header = `Bearer ${token}`;
    expect(header.length).toBeGreaterThan(9 * 1024);
    expect(header.length).toBeLessThan(10 * 1024);
    return header;
  }

  it.each(garbage)('$title on a user write route: 401; nothing changes', async ({ value, user }) => {
    // Prepare
    const authorization = await headerValue(value);
    const before = await snapshot();

    // Act
    const response = await anonymous.request('POST', SERVICES, { json: SNEAKY, headers: { authorization } });

    // Assess
    expect(outcome(response)).toEqual({ status: 401, body: user });
    await assertUnchanged(before);
  });

  it.each(garbage)('$title on an agent route: 401 authorization failed', async ({ value }) => {
    // Prepare
    const authorization = await headerValue(value);
    const before = await snapshot();

    // Act
    const response = await anonymous.request('GET', AGENT_CHANGES, { headers: { authorization } });

    // Assess
    expect(outcome(response)).toEqual({ status: 401, body: AGENT_AUTH_FAILED });
    await assertUnchanged(before);
  });
});

describe('no secret leaks', () => {
  it('GET /api/v3/iofog/{uuid} and /api/v3/iofog-list carry no provisioning key, private key or token', async () => {
    // Prepare: outstanding (unused) keys for every agent, agent calls made, credentials used
    for (const uuid of Object.values(uuids)) await issueKey(uuid);
    expect((await asAgent(await agentToken(agentA)).get(AGENT_CHANGES)).status).toBe(200);
    expect((await asAgent(await agentToken(agentB)).get(AGENT_MICROSERVICES)).status).toBe(200);
    const viewerToken = await mintUserToken(t.dataDir, { role: 'viewer' });
    secrets.push({ label: 'second viewer token', value: viewerToken });

    // Act
    const responses = [
      await api.get('/api/v3/iofog-list'),
      await new ApiClient(t.runtime.url, viewerToken).get('/api/v3/iofog-list'),
      ...(await Promise.all(Object.values(uuids).map((uuid) => api.get(`/api/v3/iofog/${uuid}`)))),
    ];

    // Assess
    expect(responses.map((response) => response.status)).toEqual(responses.map(() => 200));
    const text = responses.map((response) => response.text).join('\n');
    expect(secrets.length).toBeGreaterThan(10);
    expect(secrets.filter((secret) => text.includes(secret.value)).map((secret) => secret.label)).toEqual([]);
  });
});

describe('the runtime output at DEBUG level', () => {
  let dataDir: string | undefined;
  let child: RuntimeProcess | undefined;

  afterAll(async () => {
    if (child) {
      child.child.kill('SIGKILL');
      await waitForExit(child.child);
    }
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('never prints a provisioning key, a private key or a token; the admin token exactly once', async () => {
    // Prepare: this process's environment already points at the in-process runtime's identity provider
    // and 5 s provisioning keys; the child gets its own local key and the default key lifetime.
    const dir = mkdtempSync(join(tmpdir(), 'fogbridge-security-'));
    dataDir = dir;
    child = await spawnRuntime(dir, {
      POWERTOOLS_LOG_LEVEL: 'DEBUG',
      AUTH_PUBLIC_KEY: '',
      AUTH_JWKS_URL: '',
      PROVISIONING_KEY_TTL_SECONDS: '600',
    });
    const leaks: { label: string; value: string }[] = [];
    const admin = new ApiClient(child.url, child.adminToken);
    const nobody = new ApiClient(child.url);
    await createHub(admin);
    const edge = await admin.post<{ uuid: string }>('/api/v3/iofog', { name: 'edge', host: '10.0.0.21' });
    const other = await admin.post<{ uuid: string }>('/api/v3/iofog', { name: 'other', host: '10.0.0.22' });
    expect([edge.status, other.status]).toEqual([201, 201]);
    expect((await admin.post('/api/v3/application', { name: 'orders' })).status).toBe(201);

    // Act: issue a key, provision, make agent calls
    const issued = await admin.get<ProvisioningKey>(`/api/v3/iofog/${edge.body.uuid}/provisioning-key`);
    expect(issued.status).toBe(200);
    leaks.push({ label: 'provisioning key', value: issued.body.key });
    const outstanding = await admin.get<ProvisioningKey>(`/api/v3/iofog/${other.body.uuid}/provisioning-key`);
    expect(outstanding.status).toBe(200);
    leaks.push({ label: 'outstanding provisioning key', value: outstanding.body.key });
    const agent = new ScriptedAgent(child.url);
    const provisioned = await agent.provision(issued.body.key);
    leaks.push({ label: 'private key', value: String(provisioned.privateKey) });
    const agentTokens = [
      await agent.token(),
      await agent.token(),
      await agent.token({ jti: 'replayed-jti' }),
      await agent.token({ lifetimeSeconds: 3600 }),
      await agent.token({ subject: other.body.uuid }),
    ];
    leaks.push(...agentTokens.map((value, index) => ({ label: `agent token #${index}`, value })));
    const [changesToken, microservicesToken, replayToken, longToken, impersonationToken] = agentTokens;
    expect((await new ApiClient(child.url, changesToken).get(AGENT_CHANGES)).status).toBe(200);
    expect(
      (
        await admin.post('/api/v3/microservices', {
          name: 'worker',
          application: 'orders',
          agentName: 'edge',
        })
      ).status,
    ).toBe(201);
    expect((await new ApiClient(child.url, microservicesToken).get(AGENT_MICROSERVICES)).status).toBe(200);
    expect((await admin.post(SERVICES, SNEAKY)).status).toBe(201);
    await expect
      .poll(
        async () =>
          (await admin.get<{ provisioningStatus: string }>(`${SERVICES}/sneaky`)).body.provisioningStatus,
        { timeout: 60_000, interval: 100 },
      )
      .toBe('ready');

    // Act: failed authentication (replay, bad agent tokens, bad and misused user tokens, garbage)
    expect((await new ApiClient(child.url, replayToken).get(AGENT_CHANGES)).status).toBe(200);
    expect((await new ApiClient(child.url, replayToken).get(AGENT_CHANGES)).status).toBe(401);
    expect((await new ApiClient(child.url, longToken).get(AGENT_CHANGES)).status).toBe(401);
    expect((await new ApiClient(child.url, impersonationToken).get(AGENT_CHANGES)).status).toBe(401);
    expect((await new ApiClient(child.url, changesToken).get(SERVICES)).status).toBe(401);
    expect((await admin.get(AGENT_CHANGES)).status).toBe(401);
    const { privateKey: strangerKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const iat = nowSeconds();
    const forged = await new SignJWT({ roles: ['admin'] })
      .setProtectedHeader({ alg: 'EdDSA', kid: signingKey(dir).kid })
      .setIssuer(LOCAL_ISSUER)
      .setAudience(LOCAL_AUDIENCE)
      .setSubject('mallory')
      .setIssuedAt(iat)
      .setExpirationTime(iat + 3600)
      .sign(strangerKey);
    leaks.push({ label: 'forged user token', value: forged });
    expect((await new ApiClient(child.url, forged).post(SERVICES, SNEAKY)).status).toBe(401);
    const viewerToken = await mintUserToken(dir, { role: 'viewer' });
    leaks.push({ label: 'viewer token', value: viewerToken });
    expect((await new ApiClient(child.url, viewerToken).get(SERVICES)).status).toBe(200);
    expect((await new ApiClient(child.url, viewerToken).delete(`${SERVICES}/sneaky`)).status).toBe(403);
    expect(
      (await new ApiClient(child.url, viewerToken).get(`/api/v3/iofog/${other.body.uuid}/provisioning-key`))
        .status,
    ).toBe(403);
    expect((await nobody.request('GET', SERVICES, { headers: { authorization: 'Bearer a.b' } })).status).toBe(
      401,
    );
    expect((await nobody.post(PROVISION, { type: 1, key: issued.body.key })).status).toBe(404);

    // Assess
    const output = child.output();
    // DEBUG logging really was on (the router writes log at debug level).
    expect(output).toMatch(/"level":"DEBUG"/);
    expect({
      leaked: leaks.filter((secret) => output.includes(secret.value)).map((secret) => secret.label),
      adminTokenPrinted: output.split(child.adminToken).length - 1,
    }).toEqual({ leaked: [], adminTokenPrinted: 1 });
  });
});
