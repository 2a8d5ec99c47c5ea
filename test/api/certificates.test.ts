import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweep } from '../../shared/reconcile/sweeper.js';
import { createHub, fabricSettled } from '../fixtures/world.js';
import type { ApiClient } from '../support/client.js';
import type { GoStruct } from '../support/go-json.js';
import { startTestRuntime, type TestRuntime } from '../support/runtime.js';
import { sdkClient } from '../support/sdk.js';

/**
 * The certificate calls potctl makes through the Go SDK (`Datasance/iofog-go-sdk` `pkg/client`
 * resources.go 390-512), sent as the SDK sends them and decoded into its structs (types.go 711-791):
 * a CA and a certificate from JSON and from YAML, reading a CA through the certificate route (potctl's
 * describe and delete do), the lists, what expires soon, a renewal and the order deletes must take.
 */

// types.go 750-763
const CertificateInfo: GoStruct = {
  name: 'string',
  subject: 'string',
  hosts: 'string',
  isCA: 'bool',
  validFrom: 'time',
  validTo: 'time',
  serialNumber: 'string',
  caName: 'string',
  certificateChain: { slice: { struct: { name: 'string', subject: 'string' } } },
  daysRemaining: 'int',
  isExpired: 'bool',
  data: { struct: { certificate: 'string', privateKey: 'string' } },
};
// types.go 765-773
const CAInfo: GoStruct = {
  name: 'string',
  subject: 'string',
  isCA: 'bool',
  validFrom: 'time',
  validTo: 'time',
  serialNumber: 'string',
  data: { struct: { certificate: 'string', privateKey: 'string' } },
};
const CertificateListResponse: GoStruct = { certificates: { slice: { struct: CertificateInfo } } };
const CAListResponse: GoStruct = { cas: { slice: { struct: CAInfo } } };

interface Info {
  name: string;
  subject: string;
  hosts: string;
  isCA: boolean;
  validFrom: string;
  validTo: string;
  serialNumber: string;
  caName: string | null;
  certificateChain?: { name: string; subject: string }[];
  daysRemaining: number;
  isExpired: boolean;
  data?: { certificate: string; privateKey?: string };
}

const DAY_MS = 86_400_000;

let t: TestRuntime;
let api: ApiClient;
let sdk: ReturnType<typeof sdkClient>;
/** How far the runtime's clock runs ahead of the real time. */
let clockOffset = 0;

beforeAll(async () => {
  t = await startTestRuntime({ clock: () => Date.now() + clockOffset });
  api = t.api;
  sdk = sdkClient(t.runtime);
  await createHub(api);
  await fabricSettled(api);
});

afterAll(async () => {
  await t?.stop();
});

const caYaml = (name: string) =>
  [
    'apiVersion: datasance.com/v3',
    'kind: CertificateAuthority',
    'metadata:',
    `  name: ${name}`,
    'spec:',
    '  type: self-signed',
    `  subject: ${name}`,
    '  expiration: 24',
    '',
  ].join('\n');

const certificateYaml = (name: string, ca: string, hosts: string) =>
  [
    'apiVersion: datasance.com/v3',
    'kind: Certificate',
    'metadata:',
    `  name: ${name}`,
    'spec:',
    `  subject: ${name}`,
    `  hosts: "${hosts}"`,
    '  expiration: 12',
    '  ca:',
    '    type: direct',
    `    secretName: ${ca}`,
    '',
  ].join('\n');

const upload = (yaml: string) => ({ multipart: { field: 'certificate', file: 'certificate.yaml', yaml } });

describe('potctl certificate calls through the Go SDK', () => {
  it('CreateCA (JSON) and CreateCertificateFromYaml (kind CertificateAuthority); GetCA, ListCAs and GetCertificate read them', async () => {
    // Act
    await sdk('POST', '/certificates/ca', {
      json: { name: 'orders-ca', subject: 'Orders CA', expiration: 36, type: 'self-signed' },
    });
    await sdk('POST', '/certificates/yaml', upload(caYaml('payments-ca')));
    const ca = await sdk<Info>('GET', '/certificates/ca/payments-ca', { decode: { struct: CAInfo } });
    const cas = await sdk<{ cas: Info[] }>('GET', '/certificates/ca', {
      decode: { struct: CAListResponse },
    });
    const asCertificate = await sdk<Info>('GET', '/certificates/orders-ca', {
      decode: { struct: CertificateInfo },
    });

    // Assess
    expect(ca).toMatchObject({ name: 'payments-ca', subject: 'payments-ca', isCA: true });
    expect(new X509Certificate(ca.data!.certificate).ca).toBe(true);
    expect(cas.cas.map((entry) => entry.name)).toEqual(expect.arrayContaining(['orders-ca', 'payments-ca']));
    const orders = cas.cas.find((entry) => entry.name === 'orders-ca')!;
    expect(Date.parse(orders.validTo) - Date.parse(orders.validFrom)).toBe(Math.round(36 * 30.44 * DAY_MS));
    expect(asCertificate).toMatchObject({
      name: 'orders-ca',
      subject: 'Orders CA',
      isCA: true,
      caName: null,
      certificateChain: [],
      isExpired: false,
      hosts: '',
    });
    expect(asCertificate.data).toEqual({ certificate: expect.stringContaining('BEGIN CERTIFICATE') });
  });

  it('CreateCertificate (JSON) and CreateCertificateFromYaml (kind Certificate): signed by the named CA, with its hosts as SANs', async () => {
    // Act
    await sdk('POST', '/certificates', {
      json: {
        name: 'orders-api',
        subject: 'orders-api',
        hosts: 'orders.example.com,10.0.0.5',
        expiration: 12,
        ca: { type: 'direct', secretName: 'orders-ca' },
      },
    });
    await sdk(
      'POST',
      '/certificates/yaml',
      upload(certificateYaml('payments-api', 'payments-ca', '*.pay.example.com')),
    );
    const orders = await sdk<Info>('GET', '/certificates/orders-api', {
      decode: { struct: CertificateInfo },
    });
    const payments = await sdk<Info>('GET', '/certificates/payments-api', {
      decode: { struct: CertificateInfo },
    });
    const ca = (await api.get<Info>('/api/v3/certificates/ca/orders-ca')).body;

    // Assess
    expect(orders).toMatchObject({
      name: 'orders-api',
      hosts: 'orders.example.com,10.0.0.5',
      isCA: false,
      caName: 'orders-ca',
      certificateChain: [{ name: 'orders-ca', subject: 'Orders CA' }],
    });
    const cert = new X509Certificate(orders.data!.certificate);
    expect(cert.subjectAltName).toBe('DNS:orders.example.com, IP Address:10.0.0.5, DNS:10.0.0.5');
    expect(cert.verify(new X509Certificate(ca.data!.certificate).publicKey)).toBe(true);
    expect(Date.parse(orders.validTo) - Date.parse(orders.validFrom)).toBe(Math.round(12 * 30.44 * DAY_MS));
    expect(payments).toMatchObject({ caName: 'payments-ca', hosts: '*.pay.example.com' });
    expect(new X509Certificate(payments.data!.certificate).subjectAltName).toBe('DNS:*.pay.example.com');
  });

  it('ListCertificates decodes with the CAs, the agents’ certificates (hosts as one string) and the users’', async () => {
    // Act
    const list = await sdk<{ certificates: Info[] }>('GET', '/certificates', {
      decode: { struct: CertificateListResponse },
    });

    // Assess
    const byName = new Map(list.certificates.map((entry) => [entry.name, entry]));
    expect(byName.get('orders-ca')).toMatchObject({ isCA: true, caName: null });
    expect(byName.get('router-site-ca')).toMatchObject({ isCA: true });
    expect(byName.get('orders-api')).toMatchObject({ isCA: false, caName: 'orders-ca' });
    expect(byName.get('router-site-server-hub')).toMatchObject({
      isCA: false,
      caName: 'router-site-ca',
      hosts: 'hub.example.com',
    });
    expect(list.certificates.every((entry) => !('data' in entry))).toBe(true);
  });

  it('ListExpiringCertificates lists a 7-day certificate and not a 12-month one; `days` widens the window', async () => {
    // Prepare
    await sdk('POST', '/certificates', {
      json: {
        name: 'orders-short',
        subject: 'orders-short',
        hosts: 'short.example.com',
        expiration: 7 * DAY_MS,
        ca: { type: 'direct', secretName: 'orders-ca' },
      },
    });

    // Act
    const expiring = await sdk<{ certificates: Info[] }>('GET', '/certificates/expiring', {
      decode: { struct: CertificateListResponse },
    });
    const wider = await api.get<{ certificates: Info[] }>('/api/v3/certificates/expiring?days=400');

    // Assess
    expect(expiring.certificates.map((entry) => entry.name)).toEqual(['orders-short']);
    expect(expiring.certificates[0]).toMatchObject({
      caName: 'orders-ca',
      daysRemaining: 6,
      ca_name: 'orders-ca',
      days_remaining: 6,
      is_ca: false,
    });
    expect(wider.body.certificates.map((entry) => entry.name)).toEqual(
      expect.arrayContaining(['orders-short', 'orders-api', 'payments-api']),
    );
  });

  it('RenewCertificate: a new serial and key, the same subject, names and CA', async () => {
    // Prepare
    const before = (await api.get<Info>('/api/v3/certificates/orders-api')).body;

    // Act
    await sdk('POST', '/certificates/orders-api/renew');

    // Assess
    const after = (await api.get<Info>('/api/v3/certificates/orders-api')).body;
    expect(after.serialNumber).not.toBe(before.serialNumber);
    expect(after).toMatchObject({
      subject: before.subject,
      hosts: before.hosts,
      caName: 'orders-ca',
      certificateChain: before.certificateChain,
    });
    const ca = (await api.get<Info>('/api/v3/certificates/ca/orders-ca')).body;
    const renewed = new X509Certificate(after.data!.certificate);
    expect(renewed.verify(new X509Certificate(ca.data!.certificate).publicKey)).toBe(true);
    expect(renewed.publicKey.export({ format: 'pem', type: 'spki' })).not.toEqual(
      new X509Certificate(before.data!.certificate).publicKey.export({ format: 'pem', type: 'spki' }),
    );
  });

  it('deletes in order: a CA that signs a certificate is refused naming it, an agent’s certificate names its agent, then certificate, then CA', async () => {
    // Act
    const caFirst = await api.delete('/api/v3/certificates/ca/payments-ca');
    const agentOwn = await api.delete('/api/v3/certificates/router-site-server-hub');
    const fleetCa = await api.delete('/api/v3/certificates/ca/router-site-ca');
    await sdk('DELETE', '/certificates/payments-api');
    await sdk('DELETE', '/certificates/ca/payments-ca');

    // Assess
    expect(caFirst.status).toBe(409);
    expect(caFirst.body).toMatchObject({ name: 'ConflictError' });
    expect((caFirst.body as { message: string }).message).toContain('payments-api');
    expect(agentOwn.status).toBe(409);
    expect((agentOwn.body as { message: string }).message).toContain("held by agent hub's router");
    expect(fleetCa.status).toBe(409);
    expect((fleetCa.body as { message: string }).message).toContain(
      "router-site-server-hub (held by agent hub's router)",
    );
    expect((await api.get('/api/v3/certificates/payments-api')).status).toBe(404);
    expect((await api.get('/api/v3/certificates/payments-ca')).status).toBe(404);
    expect((await api.get('/api/v3/certificates/router-site-server-hub')).status).toBe(200);
  });
});

describe('bad certificate input: a 4xx naming the field, nothing written', () => {
  const leaf = (overrides: Record<string, unknown>) => ({
    name: 'bad-one',
    subject: 'bad-one',
    hosts: 'bad.example.com',
    ca: { type: 'direct', secretName: 'orders-ca' },
    ...overrides,
  });

  it.each([
    ['a name with a slash', leaf({ name: 'orders/api' }), "Field 'name'", 'orders/api'],
    ['a name of 256 characters', leaf({ name: 'a'.repeat(256) }), "Field 'name'", 'aaaa'],
    ['expiration 0', leaf({ expiration: 0 }), "Field 'expiration'", '0'],
    ['a negative expiration', leaf({ expiration: -5 }), "Field 'expiration'", '-5'],
    ['an expiration past its CA', leaf({ expiration: 999 }), "Field 'expiration'", 'orders-ca'],
    ['a host that is not one', leaf({ hosts: 'good.example.com,bad host' }), "Field 'hosts'", 'bad host'],
    [
      'a CA that does not exist',
      leaf({ ca: { type: 'direct', secretName: 'nobody-ca' } }),
      'CA with name nobody-ca',
      '',
    ],
  ])('%s', async (_case, body, field, value) => {
    // Act
    const response = await api.post('/api/v3/certificates', body);

    // Assess
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
    const message = (response.body as { message: string }).message;
    expect(message).toContain(field);
    expect(message).toContain(value);
    const list = (await api.get<{ certificates: Info[] }>('/api/v3/certificates')).body.certificates;
    expect(list.map((entry) => entry.name)).not.toContain('bad-one');
    expect(list.some((entry) => entry.name.startsWith('orders/') || entry.name.length > 253)).toBe(false);
  });

  it('renew of a CA through the certificate route is refused naming the field; the CA is unchanged', async () => {
    // Prepare
    const before = (await api.get<Info>('/api/v3/certificates/ca/orders-ca')).body;

    // Act
    const response = await api.post('/api/v3/certificates/orders-ca/renew', {});

    // Assess
    expect(response.status).toBe(400);
    expect((response.body as { message: string }).message).toMatch(/^Field 'name': orders-ca is a CA/);
    expect((await api.get<Info>('/api/v3/certificates/ca/orders-ca')).body.serialNumber).toBe(
      before.serialNumber,
    );
  });

  it('YAML of another kind is refused', async () => {
    // Act
    const response = await api.postYaml(
      '/api/v3/certificates/yaml',
      'apiVersion: datasance.com/v3\nkind: Secret\nmetadata:\n  name: bad-one\nspec:\n  type: tls\n',
      'POST',
      'certificate',
    );

    // Assess
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ name: 'ValidationError', message: 'Invalid kind "Secret"' });
    expect((await api.get('/api/v3/certificates/bad-one')).status).toBe(404);
  });

  it('an expired CA cannot sign: 400 naming ca.secretName; nothing written', async () => {
    // Prepare
    expect(
      (
        await api.post('/api/v3/certificates/ca', {
          name: 'day-ca',
          subject: 'Day CA',
          expiration: DAY_MS,
          type: 'self-signed',
        })
      ).status,
    ).toBe(201);
    clockOffset = 2 * DAY_MS;

    // Act
    const response = await api.post(
      '/api/v3/certificates',
      leaf({ ca: { type: 'direct', secretName: 'day-ca' } }),
    );
    const listed = (
      await api.get<{ cas: { name: string; is_expired: boolean }[] }>('/api/v3/certificates/ca')
    ).body;
    clockOffset = 0;

    // Assess
    expect(response.status).toBe(400);
    expect((response.body as { message: string }).message).toMatch(
      /^Field 'ca\.secretName': CA day-ca expired on /,
    );
    expect(listed.cas.find((ca) => ca.name === 'day-ca')?.is_expired).toBe(true);
    expect((await api.get('/api/v3/certificates/bad-one')).status).toBe(404);
  });
});

describe('nothing fogbridge made expires unnoticed', () => {
  it('59 months on, the sweep starts rotating the fleet CAs it made (they end within twice the renewal window)', async () => {
    // Prepare
    clockOffset = 59 * 30.44 * DAY_MS;

    // Act
    await t.inRuntime(() => sweep({ full: false }));
    const phases = await Promise.all(
      ['router-site-ca', 'nats-site-ca', 'orders-ca'].map(
        async (name) =>
          (await api.get<{ rotation?: { phase: string } }>(`/api/v3/certificates/ca/${name}`)).body.rotation
            ?.phase ?? 'none',
      ),
    );
    clockOffset = 0;

    // Assess: a CA a user made is theirs to rotate
    expect(phases).toEqual(['trust', 'trust', 'none']);
  });
});
