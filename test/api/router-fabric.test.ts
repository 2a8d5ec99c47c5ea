import { X509Certificate } from 'node:crypto';
import forge from 'node-forge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkoutConnector, checkoutListener, checkoutYaml } from '../fixtures/seed-000.js';
import { createHub, createSeedBackend, fabricSettled, HUB, provisionAgent } from '../fixtures/world.js';
import { type ApiClient, eventually } from '../support/client.js';
import { type GoType, goUnmarshal } from '../support/go-json.js';
import { handshake } from '../support/router-tls.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';
import type { ScriptedAgent } from '../support/scripted-agent.js';

/**
 * The router fabric of seeds 001/004 on a remote control plane, seen as the agents see it: the router
 * config each pulls (decoded with the Datasance Router's own Go types), the certificate files its
 * volume mounts deliver, and a real TLS handshake between the hub's edge listener and fog-a's connector
 * made with exactly those files.
 */

const poll = { timeout: 60_000, interval: 200 };
let t: TestRuntime;
let api: ApiClient;
let hub: ScriptedAgent;
let fogA: ScriptedAgent;
let hubUuid: string;

type Profile = { name: string; caCertFile: string; certFile?: string; privateKeyFile?: string };
interface PulledConfig {
  metadata: { id: string; mode: string };
  listeners: Record<string, { name: string; role: string; host: string; port: number; sslProfile?: string }>;
  connectors: Record<string, { name: string; role: string; host: string; port: string; sslProfile: string }>;
  sslProfiles: Record<string, Profile>;
  bridges: { tcpListeners: Record<string, unknown>; tcpConnectors: Record<string, unknown> };
}

/** Datasance Router `internal/router/router.go` Config and `internal/qdr/qdr.go` types, field by field. */
const tcpEndpoint: GoType = {
  struct: {
    name: 'string',
    host: 'string',
    port: 'string',
    address: 'string',
    siteId: 'string',
    sslProfile: 'string',
    verifyHostname: 'bool',
    processId: 'string',
  },
};
const ROUTER_CONFIG: GoType = {
  struct: {
    Metadata: {
      struct: {
        id: 'string',
        mode: 'string',
        helloMaxAgeSeconds: 'string',
        dataConnectionCount: 'string',
        metadata: 'string',
      },
    },
    SslProfiles: {
      map: { struct: { name: 'string', certFile: 'string', privateKeyFile: 'string', caCertFile: 'string' } },
    },
    Listeners: {
      map: {
        struct: {
          name: 'string',
          role: 'string',
          host: 'string',
          port: 'int',
          routeContainer: 'bool',
          http: 'bool',
          cost: 'int',
          sslProfile: 'string',
          saslMechanisms: 'string',
          authenticatePeer: 'bool',
          linkCapacity: 'int',
          httpRootDir: 'string',
          websockets: 'bool',
          healthz: 'bool',
          metrics: 'bool',
          maxFrameSize: 'int',
          maxSessionFrames: 'int',
        },
      },
    },
    Connectors: {
      map: {
        struct: {
          name: 'string',
          role: 'string',
          host: 'string',
          port: 'string',
          routeContainer: 'bool',
          cost: 'int',
          verifyHostname: 'bool',
          sslProfile: 'string',
          linkCapacity: 'int',
          maxFrameSize: 'int',
          maxSessionFrames: 'int',
        },
      },
    },
    Addresses: { map: { struct: { prefix: 'string', distribution: 'string' } } },
    LogConfig: { map: { struct: { module: 'string', enable: 'string' } } },
    SiteConfig: {
      struct: {
        name: 'string',
        location: 'string',
        provider: 'string',
        platform: 'string',
        namespace: 'string',
        version: 'string',
      },
    },
    Bridges: { struct: { TcpListeners: { map: tcpEndpoint }, TcpConnectors: { map: tcpEndpoint } } },
  },
};

const provision = (uuid: string) => provisionAgent(api, t.runtime.url, uuid);

/** What an Edgelet has after pulling: the router microservice as it parsed it, and its mounts' files. */
async function pulled(agent: ScriptedAgent) {
  const router = (await agent.loadMicroservices()).find((microservice) => microservice.isRouter)!;
  await agent.loadVolumeMounts();
  return {
    agent,
    router,
    config: JSON.parse(router.config) as PulledConfig,
    mounts: [...agent.mounted.values()],
  };
}

/** The key, certificate and CA files a profile names, as the router container reads them. */
function credentials(profileName: string, state: Awaited<ReturnType<typeof pulled>>) {
  const profile = state.config.sslProfiles[profileName]!;
  const file = (path: string | undefined) => state.agent.containerFile(state.router, path ?? '')!;
  return { ca: file(profile.caCertFile), cert: file(profile.certFile), key: file(profile.privateKeyFile) };
}

/** Credentials from a CA the fleet does not know (a stranger with the same names). */
function foreignCredentials(commonName: string, host: string) {
  const make = (
    subject: string,
    issuer: forge.pki.Certificate | undefined,
    issuerKey: forge.pki.rsa.PrivateKey | undefined,
    ca: boolean,
  ) => {
    const keys = forge.pki.rsa.generateKeyPair({ bits: 2048 });
    const cert = forge.pki.createCertificate();
    cert.publicKey = keys.publicKey;
    cert.serialNumber = '01';
    cert.validity.notBefore = new Date(Date.now() - 60_000);
    cert.validity.notAfter = new Date(Date.now() + 86_400_000);
    cert.setSubject([{ name: 'commonName', value: subject }]);
    cert.setIssuer(issuer ? issuer.subject.attributes : [{ name: 'commonName', value: subject }]);
    cert.setExtensions(
      ca
        ? [
            { name: 'basicConstraints', cA: true },
            { name: 'keyUsage', keyCertSign: true },
          ]
        : [
            { name: 'subjectAltName', altNames: [{ type: 2, value: host }] },
            { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
          ],
    );
    cert.sign(issuerKey ?? keys.privateKey, forge.md.sha256.create());
    return { cert, key: keys.privateKey };
  };
  const root = make('router-site-ca', undefined, undefined, true);
  const leaf = make(commonName, root.cert, root.key, false);
  return {
    ca: forge.pki.certificateToPem(root.cert),
    cert: forge.pki.certificateToPem(leaf.cert),
    key: forge.pki.privateKeyToPem(leaf.key),
  };
}

beforeAll(async () => {
  t = await startTestRuntime();
  api = t.api;
  hubUuid = await createHub(api);
  await createSeedBackend(api);
  expect((await api.postYaml('/api/v3/services/yaml', checkoutYaml)).status).toBe(201);
  hub = await provision(hubUuid);
  fogA = await provision('fog-a');
  await eventually(async () => {
    const state = await pulled(fogA);
    return hubUuid in (state.config.connectors ?? {}) &&
      'checkout-listener' in (state.config.bridges?.tcpListeners ?? {})
      ? true
      : undefined;
  }, "fog-a's link to the hub and the checkout listener");
  // The hub's edge listener appears once the hub's own certificates are issued (its reconcile may finish
  // after fog-a's).
  await eventually(
    async () => ((await pulled(hub)).config.listeners?.[`${hubUuid}-edge`] ? true : undefined),
    "the hub's edge listener",
  );
  // The agents' NATS files come after their routers' (the same reconcile, later): a test that compares
  // an agent's mounts before and after must start from the finished set.
  await fabricSettled(api);
}, 120_000);

afterAll(async () => {
  await t?.stop();
});

describe('a real TLS link between the hub and fog-a, with the files their volume mounts deliver', () => {
  it("fog-a's connector credentials and the hub's edge listener credentials complete a mutual handshake, the hub's name verified", async () => {
    // Prepare: the profile each side's link names, resolved to files through its volume mappings
    const hubState = await pulled(hub);
    const fogState = await pulled(fogA);
    const edgeListener = hubState.config.listeners[`${hubUuid}-edge`]!;
    const connector = fogState.config.connectors[hubUuid]!;

    // Act
    const result = await handshake(
      credentials(edgeListener.sslProfile!, hubState),
      credentials(connector.sslProfile, fogState),
      connector.host,
    );

    // Assess: the hub sees fog-a's certificate (CN = fog-a's uuid)
    expect(connector.host).toBe(HUB.host);
    expect(result).toEqual({ ok: true, clientSubject: 'fog-a' });
  });

  it('refuses a client certificate from a foreign CA, a server certificate from a foreign CA, and a wrong server name', async () => {
    // Prepare
    const hubState = await pulled(hub);
    const fogState = await pulled(fogA);
    const server = credentials(hubState.config.listeners[`${hubUuid}-edge`]!.sslProfile!, hubState);
    const client = credentials(fogState.config.connectors[hubUuid]!.sslProfile, fogState);
    const stranger = foreignCredentials('fog-a', HUB.host);

    // Act
    const foreignClient = await handshake(server, { ...stranger, ca: client.ca }, HUB.host);
    const foreignServer = await handshake({ ...stranger, ca: server.ca }, client, HUB.host);
    const wrongName = await handshake(server, client, 'elsewhere.example.com');

    // Assess
    expect(foreignClient.ok).toBe(false);
    // The stranger's CA carries our CA's name but an RSA key where ours is P-256: no CA the client
    // trusts can have signed the server's certificate.
    expect(foreignServer).toEqual({ ok: false, error: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' });
    expect(wrongName).toEqual({ ok: false, error: 'ERR_TLS_CERT_ALTNAME_INVALID' });
  });
});

describe('the router config an agent pulls', () => {
  it.each(['the edge agent fog-a', 'the interior system agent hub'] as const)(
    'for %s: decodes into the Router types, names itself, listens on 5672, links with profiles whose files are mounted, holds the bridges',
    async (which) => {
      // Prepare
      const edge = which === 'the edge agent fog-a';
      const state = await pulled(edge ? fogA : hub);
      const uuid = edge ? 'fog-a' : hubUuid;
      const token = edge ? 'fog-a' : 'hub';

      // Act: Go's encoding/json with the Router's structs (a type error kills the Router)
      const decode = () => goUnmarshal(JSON.parse(state.router.config), ROUTER_CONFIG, 'Config');

      // Assess
      expect(decode).not.toThrow();
      expect(state.config.metadata).toMatchObject({ id: uuid, mode: edge ? 'edge' : 'interior' });
      expect(state.config.listeners[`${uuid}-amqp`]).toEqual({
        name: `${uuid}-amqp`,
        role: 'normal',
        host: '0.0.0.0',
        port: 5672,
      });
      if (edge) {
        expect(state.config.connectors).toEqual({
          [hubUuid]: {
            name: hubUuid,
            role: 'edge',
            host: HUB.host,
            port: '45671',
            sslProfile: `router-site-server-${token}`,
          },
        });
        expect(state.config.bridges).toEqual({
          tcpListeners: { 'checkout-listener': checkoutListener },
          tcpConnectors: { 'checkout-connector': checkoutConnector },
        });
      } else {
        expect(state.config.listeners[`${uuid}-inter-router`]).toMatchObject({
          role: 'inter-router',
          port: 55671,
          sslProfile: `router-site-server-${token}`,
        });
        expect(state.config.listeners[`${uuid}-edge`]).toMatchObject({
          role: 'edge',
          port: 45671,
          sslProfile: `router-site-server-${token}`,
        });
        expect(state.config.connectors).toEqual({});
        expect(state.config.bridges).toEqual({
          tcpListeners: { 'checkout-listener': checkoutListener },
          tcpConnectors: {},
        });
      }
      const named = [
        ...Object.values(state.config.listeners),
        ...Object.values(state.config.connectors),
      ].flatMap((link) => (link.sslProfile ? [link.sslProfile] : []));
      for (const name of new Set(named)) {
        const profile = state.config.sslProfiles[name]!;
        for (const path of [profile.caCertFile, profile.certFile!, profile.privateKeyFile!]) {
          expect(state.agent.containerFile(state.router, path), path).toMatch(/^-----BEGIN /);
        }
      }
    },
  );
});

describe('changes that move the fabric', () => {
  it("changing the default router's host re-issues nothing on the agents and re-points their connectors; the hub's certificate adds the name", async () => {
    // Prepare
    const before = (await pulled(fogA)).mounts.map((mount) => [mount.name, mount.version]);
    const hubSiteBefore = (await pulled(hub)).mounts.find(
      (mount) => mount.name === 'router-site-server-hub',
    )!;

    // Act
    const put = await api.put('/api/v3/router', {
      host: 'hub2.example.com',
      interRouterPort: 55671,
      edgeRouterPort: 45671,
    });

    // Assess
    expect(put.status).toBe(200);
    await expect
      .poll(async () => (await pulled(fogA)).config.connectors[hubUuid]?.host, poll)
      .toBe('hub2.example.com');
    expect((await pulled(fogA)).mounts.map((mount) => [mount.name, mount.version])).toEqual(before);
    await expect
      .poll(
        async () =>
          (await pulled(hub)).mounts.find((mount) => mount.name === 'router-site-server-hub')!.version,
        poll,
      )
      .toBe(hubSiteBefore.version + 1);
    const hubSite = (await pulled(hub)).mounts.find((mount) => mount.name === 'router-site-server-hub')!;
    const cert = new X509Certificate(hubSite.files['tls.crt']!);
    expect(cert.subjectAltName).toBe(`DNS:${HUB.host}, DNS:hub2.example.com`);
  });

  it("changing an agent's host reissues its certificates with the new name and raises its flags", async () => {
    // Prepare
    const before = await pulled(fogA);
    await fogA.poll();

    // Act
    const patched = await api.patch('/api/v3/iofog/fog-a', { host: '10.0.0.9' });

    // Assess
    expect(patched.status).toBe(204);
    await expect.poll(async () => (await fogA.changes()).flags.volumeMounts, poll).toBe(true);
    expect((await fogA.changes()).flags.microserviceList).toBe(true);
    // Every certificate (router and NATS) is reissued; a leaf's NATS files do not name its host.
    const expected = before.mounts.map((mount) => [
      mount.name,
      mount.files['tls.crt'] === undefined ? mount.version : mount.version + 1,
    ]);
    await expect
      .poll(async () => (await pulled(fogA)).mounts.map((mount) => [mount.name, mount.version]), poll)
      .toEqual(expected);
    expect(expected.filter(([, version], index) => version !== before.mounts[index]!.version)).toHaveLength(
      4,
    );
    const after = await pulled(fogA);
    const site = after.mounts.find((mount) => mount.name === 'router-site-server-fog-a')!;
    const cert = new X509Certificate(site.files['tls.crt']!);
    expect(cert.subjectAltName).toBe('IP Address:10.0.0.9, DNS:10.0.0.9');
  });

  it("changing the hub agent's host and tags reissues its certificate and keeps every bridge it holds", async () => {
    // Prepare
    const before = await pulled(hub);
    const siteBefore = before.mounts.find((mount) => mount.name === 'router-site-server-hub')!;
    await hub.poll();

    // Act
    const patched = await api.patch(`/api/v3/iofog/${hubUuid}`, {
      host: '10.0.0.42',
      tags: ['service.iofog.org/tag: checkout'],
    });

    // Assess
    expect(patched.status).toBe(204);
    await expect.poll(async () => (await hub.changes()).flags.volumeMounts, poll).toBe(true);
    await expect
      .poll(
        async () =>
          (await pulled(hub)).mounts.find((mount) => mount.name === 'router-site-server-hub')!.version,
        poll,
      )
      .toBe(siteBefore.version + 1);
    const after = await pulled(hub);
    const site = after.mounts.find((mount) => mount.name === 'router-site-server-hub')!;
    expect(new X509Certificate(site.files['tls.crt']!).subjectAltName).toContain('IP Address:10.0.0.42');
    expect(after.config.bridges).toEqual({
      tcpListeners: { 'checkout-listener': checkoutListener },
      tcpConnectors: {},
    });
    expect(after.config.listeners).toEqual(before.config.listeners);
  });
});

describe('the certificate API on a remote control plane', () => {
  const CA = '/api/v3/certificates/ca';
  const listCas = async () =>
    (await api.get<{ cas: { name: string }[] }>(CA)).body.cas.map((ca) => ca.name).sort();

  it('lists the four fleet CAs fogbridge created itself, and hands out no private key', async () => {
    // Act
    const names = await listCas();
    const one = await api.get<Record<string, unknown>>(`${CA}/router-site-ca`);
    const issued = await api.get<{ certificates: { name: string; caName: string | null }[] }>(
      '/api/v3/certificates',
    );

    // Assess
    expect(names).toEqual([
      'default-nats-local-ca',
      'default-router-local-ca',
      'nats-site-ca',
      'router-site-ca',
    ]);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ name: 'router-site-ca', subject: 'router-site-ca', isCA: true });
    expect(one.text).not.toMatch(/PRIVATE KEY/);
    expect(issued.text).not.toMatch(/PRIVATE KEY/);
    expect(issued.body.certificates.map((c) => [c.name, c.caName])).toEqual(
      expect.arrayContaining([
        ['router-site-server-fog-a', 'router-site-ca'],
        ['router-local-server-fog-a', 'default-router-local-ca'],
      ]),
    );
  });

  it.each([
    [
      'an unknown CA type',
      { name: 'x-ca', type: 'magic' },
      400,
      {
        name: 'ValidationError',
        message: `Field 'type' is not one of enum values: self-signed,k8s-secret,direct (got "magic")`,
      },
    ],
    [
      'k8s-secret on a remote control plane',
      { name: 'x-ca', type: 'k8s-secret', secretName: 'x-ca' },
      400,
      {
        name: 'ValidationError',
        message:
          "Field 'type': k8s-secret needs a Kubernetes control plane (CONTROL_PLANE=kubernetes); use self-signed",
      },
    ],
    [
      'direct (no secret store)',
      { name: 'x-ca', type: 'direct', secretName: 'x-ca' },
      400,
      {
        name: 'ValidationError',
        message:
          "Field 'type': direct needs a secret store, which fogbridge does not offer; on Kubernetes use k8s-secret",
      },
    ],
    [
      'self-signed without a subject',
      { name: 'x-ca', type: 'self-signed', expiration: 12 },
      400,
      { name: 'ValidationError', message: "Required field 'subject' is missing" },
    ],
    [
      'a duplicate CA name',
      { name: 'router-site-ca', type: 'self-signed', subject: 'again', expiration: 12 },
      409,
      { name: 'ConflictError', message: 'CA with name router-site-ca already exists' },
    ],
  ])('%s: a precise 4xx, and no CA is written', async (_title, body, status, expected) => {
    // Prepare
    const before = await listCas();

    // Act
    const response = await api.post(CA, body);

    // Assess
    expect({ status: response.status, body: response.body }).toEqual({ status, body: expected });
    expect(await listCas()).toEqual(before);
  });

  it.each(['Ünïcødé ☃', '证书', '🔐 probe'])(
    'creates a CA with the UTF-8 subject %s: a UTF8String CN, read back as sent',
    async (subject) => {
      // Act
      const created = await api.post(CA, { name: 'utf8-ca', type: 'self-signed', subject, expiration: 12 });
      const read = await api.get<{ subject: string; data: { certificate: string } }>(`${CA}/utf8-ca`);
      const deleted = await api.delete(`${CA}/utf8-ca`);

      // Assess
      expect(created.status).toBe(201);
      expect(read.body.subject).toBe(subject);
      const der = new X509Certificate(read.body.data.certificate).raw;
      // The CN's value: tag 0x0c (UTF8String), then its length and its UTF-8 bytes.
      const bytes = Buffer.from(subject, 'utf8');
      expect(der.includes(Buffer.concat([Buffer.from([0x0c, bytes.length]), bytes]))).toBe(true);
      expect(new X509Certificate(read.body.data.certificate).subject).toBe(`CN=${subject}`);
      expect(deleted.status).toBe(204);
    },
  );

  it('gives an agent whose host is an IPv6 literal certificates with that IP SAN', async () => {
    // Act
    const created = await api.post<{ uuid: string }>('/api/v3/iofog', { name: 'fog-v6', host: 'fd00:10::5' });
    const site = await eventually(async () => {
      const read = await api.get<{ data: { certificate: string } }>(
        '/api/v3/certificates/router-site-server-fog-v6',
      );
      return read.status === 200 ? read.body : undefined;
    }, 'the site certificate of fog-v6');

    // Assess
    expect(created.status).toBe(201);
    expect(new X509Certificate(site.data.certificate).subjectAltName).toBe('IP Address:FD00:10:0:0:0:0:0:5');
    expect((await api.delete(`/api/v3/iofog/${created.body.uuid}`)).status).toBe(204);
  });

  it('creates a self-signed CA (months below 1000), reads it, and deletes it; a CA that signed certificates stays (409)', async () => {
    // Act
    const created = await api.post<{ valid_from: string; valid_to: string }>(CA, {
      name: 'lab-ca',
      type: 'self-signed',
      subject: 'Lab CA',
      expiration: 12,
    });
    const read = await api.get(`${CA}/lab-ca`);
    const inUse = await api.delete(`${CA}/router-site-ca`);
    const removed = await api.delete(`${CA}/lab-ca`);
    const gone = await api.get(`${CA}/lab-ca`);

    // Assess
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'lab-ca', subject: 'Lab CA', type: 'self-signed' });
    const days = (Date.parse(created.body.valid_to) - Date.parse(created.body.valid_from)) / 86_400_000;
    expect(Math.round(days)).toBe(365);
    expect(read.status).toBe(200);
    expect(inUse.status).toBe(409);
    expect((inUse.body as { message: string }).message).toMatch(
      /^CA router-site-ca still signs certificates in use: router-site-server-\S+ \(held by agent \S+'s router\)/,
    );
    expect(removed.status).toBe(204);
    expect({ status: gone.status, body: gone.body }).toEqual({
      status: 404,
      body: { name: 'NotFoundError', message: 'CA with name lab-ca not found' },
    });
  });
});

describe('agent names and the Controller register', () => {
  it('an agent rename is refused (its name names its certificates); nothing changes', async () => {
    // Act
    const response = await api.patch('/api/v3/iofog/fog-a', { name: 'fog-renamed' });
    const agent = await api.get<{ name: string }>('/api/v3/iofog/fog-a');

    // Assess
    expect({ status: response.status, body: response.body }).toEqual({
      status: 400,
      body: {
        name: 'ValidationError',
        message: `Field 'name' cannot be changed (stored "fog-a", got "fog-renamed"): an agent's name names its certificates`,
      },
    });
    expect(agent.body.name).toBe('fog-a');
  });

  it('the system agent registers its Controller (200 {uuid}, listed with isController); an edge agent gets 403', async () => {
    // Prepare
    const body = {
      uuid: 'c0ffee00-0000-4000-8000-000000000001',
      name: 'controller',
      schedule: 0,
      images: [{ containerImage: 'ghcr.io/datasance/controller:3.9.0', archId: 1 }],
      registryId: 1,
      ports: [{ internal: 51121, external: 51121, protocol: 'tcp' }],
      capAdd: [],
    };

    // Act
    const registered = await hub.request('POST', 'controller/register', body);
    const again = await hub.request('POST', 'controller/register', body);
    const listed = (await hub.loadMicroservices()).find((microservice) => microservice.uuid === body.uuid);
    const refused = await fogA
      .request('POST', 'controller/register', body)
      .catch((error: Error) => error.message);

    // Assess
    expect(registered).toEqual({ uuid: body.uuid });
    expect(again).toEqual({ uuid: body.uuid });
    expect(listed).toMatchObject({
      name: 'controller',
      application: 'system-hub',
      imageId: 'ghcr.io/datasance/controller:3.9.0',
    });
    expect(refused).toMatch(/403/);
  });

  it.each(['router', 'nats'])(
    "the system agent cannot register its Controller under its %s microservice's uuid (400)",
    async (kind) => {
      // Prepare
      const uuid = `${hubUuid}-${kind}`;
      const body = {
        uuid,
        name: 'controller',
        images: [{ containerImage: 'ghcr.io/datasance/controller:3.9.0', archId: 1 }],
        registryId: 1,
      };

      // Act
      const refused = await hub
        .request('POST', 'controller/register', body)
        .catch((error: Error) => error.message);

      // Assess
      expect(refused).toBe(
        `controller answered 400: ${JSON.stringify({
          name: 'ValidationError',
          message: `Field 'uuid' is reserved: a uuid ending in -${kind} names an agent's ${kind === 'nats' ? 'NATS' : 'router'} microservice, got ${JSON.stringify(uuid)}`,
        })}`,
      );
      expect(
        (await hub.loadMicroservices())
          .filter((microservice) => microservice.uuid === uuid)
          .map((microservice) => microservice.name),
      ).toEqual([kind]);
    },
  );
});
