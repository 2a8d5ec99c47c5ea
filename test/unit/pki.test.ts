import { execFileSync } from 'node:child_process';
import { createPrivateKey, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  certificateAuthorityProblem,
  certificateFacts,
  certificateSerial,
  createCertificateAuthority,
  FLEET_CA_VALIDITY_DAYS,
  issueCertificate,
  selfSignedLeaf,
  subjectAltNames,
} from '../../shared/domain/pki.js';
import { opensslCa } from '../support/openssl-ca.js';

/**
 * The fleet's certificate profile, checked on certificates node:crypto (OpenSSL) parses: ECDSA P-256
 * CAs and leaves; an imported RSA or EC CA signing leaves too.
 */

const DAY_MS = 86_400_000;
const now = new Date('2026-12-01T00:00:00Z');
const ca = await createCertificateAuthority('router-site-ca', { now });
const leaf = await issueCertificate(ca, {
  commonName: 'a1b2c3',
  hosts: ['hub.example.com', '10.0.0.5', '2001:db8::5'],
  now,
});

describe('a fleet CA', () => {
  const cert = new X509Certificate(ca.certPem);

  it('is CN=<name>, self-issued, CA:TRUE, valid 60 months of 30.44 days', () => {
    // Assess
    expect(cert.subject).toBe('CN=router-site-ca');
    expect(cert.issuer).toBe('CN=router-site-ca');
    expect(cert.ca).toBe(true);
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(Date.parse(cert.validTo) - Date.parse(cert.validFrom)).toBe(
      Math.round((FLEET_CA_VALIDITY_DAYS * DAY_MS) / 1000) * 1000,
    );
  });

  it('has an ECDSA P-256 key in SEC 1 PEM that matches the certificate', () => {
    // Assess
    expect(ca.keyPem.startsWith('-----BEGIN EC PRIVATE KEY-----')).toBe(true);
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(certificateAuthorityProblem(ca.certPem, ca.keyPem)).toBeUndefined();
  });
});

describe('a certificate issued by it', () => {
  const cert = new X509Certificate(leaf.certPem);

  it('verifies against the CA and is not a CA itself', () => {
    // Assess
    expect(cert.verify(new X509Certificate(ca.certPem).publicKey)).toBe(true);
    expect(cert.checkIssued(new X509Certificate(ca.certPem))).toBe(true);
    expect(cert.ca).toBe(false);
    expect(cert.subject).toBe('CN=a1b2c3');
  });

  it('names its hosts: DNS for names, IP and DNS for IPv4, IP for IPv6', () => {
    // Assess
    expect(cert.subjectAltName).toBe(
      'DNS:hub.example.com, IP Address:10.0.0.5, DNS:10.0.0.5, IP Address:2001:DB8:0:0:0:0:0:5',
    );
    expect(cert.checkHost('hub.example.com')).toBe('hub.example.com');
    expect(cert.checkIP('10.0.0.5')).toBe('10.0.0.5');
  });

  it('has an ECDSA P-256 key in SEC 1 PEM that matches the certificate, signed ECDSA SHA-256 by the CA', () => {
    // Assess
    expect(leaf.keyPem.startsWith('-----BEGIN EC PRIVATE KEY-----')).toBe(true);
    expect(cert.publicKey.asymmetricKeyType).toBe('ec');
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(cert.checkPrivateKey(createPrivateKey(leaf.keyPem))).toBe(true);
  });

  it('serves and authenticates clients (serverAuth, clientAuth), valid five years', () => {
    // Assess
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
    expect(Date.parse(cert.validTo) - Date.parse(cert.validFrom)).toBe(5 * 365 * DAY_MS);
  });
});

describe('serial numbers', () => {
  it('are positive even when the random bytes start above 0x7f, and never zero', () => {
    // Prepare
    const draws = [Buffer.alloc(16, 0xff), Buffer.alloc(16, 0), Buffer.from('80'.repeat(16), 'hex')];
    const random = () => draws.shift()!;

    // Act
    const first = certificateSerial(random);
    const second = certificateSerial(random);

    // Assess: the all-zero draw is skipped; a zero byte stays in front of a byte with its top bit set
    expect(first).toBe(`7f${'ff'.repeat(15)}`);
    expect(second).toBe(`00${'80'.repeat(15)}`);
  });

  it('are written as DER writes an INTEGER: no leading zero byte in front of a byte below 0x80', () => {
    // Prepare
    const random = () => Buffer.from(`0000${'05'.repeat(14)}`, 'hex');

    // Act / Assess
    expect(certificateSerial(random)).toBe('05'.repeat(14));
  });

  it('are what the issued certificates carry, 16 bytes with the top bit clear', () => {
    // Assess
    for (const pem of [ca.certPem, leaf.certPem]) {
      const serial = new X509Certificate(pem).serialNumber;
      expect(serial.length).toBeLessThanOrEqual(32);
      expect(Number.parseInt(serial.padStart(32, '0').slice(0, 2), 16)).toBeLessThan(0x80);
    }
  });
});

describe('subjectAltNames', () => {
  it.each([
    [['a.example.com'], [{ type: 'dns', value: 'a.example.com' }]],
    [
      ['10.1.2.3'],
      [
        { type: 'ip', value: '10.1.2.3' },
        { type: 'dns', value: '10.1.2.3' },
      ],
    ],
    [['[fe80::1]'], [{ type: 'ip', value: 'fe80::1' }]],
    [[' x ', 'x', ''], [{ type: 'dns', value: 'x' }]],
  ])('%j', (hosts, names) => {
    // Act / Assess
    expect(subjectAltNames(hosts)).toEqual(names);
  });
});

describe('certificateAuthorityProblem (an imported CA Secret)', () => {
  it.each([
    [
      'a leaf certificate',
      leaf.certPem,
      leaf.keyPem,
      'is not a certificate authority (basicConstraints CA:TRUE is missing)',
    ],
    ['another key', ca.certPem, leaf.keyPem, 'has a key that does not belong to its certificate'],
    ['no PEM at all', 'hello', ca.keyPem, 'is not a PEM certificate'],
    ['a key that is not PEM', ca.certPem, 'not a key', 'has a key that is not a PEM private key'],
    [
      'an Ed25519 key',
      ca.certPem,
      generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      'has a key of type ed25519; an RSA key or an EC key on P-256, P-384 or P-521 is needed',
    ],
  ])('%s: %s', (_case, certPem, keyPem, problem) => {
    // Act / Assess
    expect(certificateAuthorityProblem(certPem, keyPem)).toBe(problem);
  });
});

describe('an imported CA (made by OpenSSL)', () => {
  it.each([
    ['RSA 2048', ['-newkey', 'rsa:2048'], 'sha256WithRSAEncryption'],
    ['EC P-384', ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-384'], 'ecdsa-with-SHA384'],
  ])(
    'with an %s key is accepted and signs P-256 leaves that OpenSSL verifies against it',
    async (_kind, keyArgs, algorithm) => {
      // Prepare
      const { dir, certFile, ...pem } = opensslCa('Operator CA', { keyArgs });

      // Act
      const issued = await issueCertificate(pem, { commonName: 'fog-b', hosts: ['fog-b.example.com'] });
      writeFileSync(join(dir, 'leaf.crt'), issued.certPem);

      // Assess
      expect(certificateAuthorityProblem(pem.certPem, pem.keyPem)).toBeUndefined();
      const cert = new X509Certificate(issued.certPem);
      expect(cert.issuer).toBe('CN=Operator CA');
      expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
      expect(cert.verify(new X509Certificate(pem.certPem).publicKey)).toBe(true);
      const text = execFileSync('openssl', ['x509', '-in', join(dir, 'leaf.crt'), '-noout', '-text'], {
        encoding: 'utf8',
      });
      expect(text).toContain(`Signature Algorithm: ${algorithm}`);
      expect(
        execFileSync('openssl', ['verify', '-CAfile', certFile, join(dir, 'leaf.crt')], {
          encoding: 'utf8',
        }).trim(),
      ).toBe(`${join(dir, 'leaf.crt')}: OK`);
    },
  );
});

describe('validity times', () => {
  it('are whole seconds, also past 2049 where they are GeneralizedTime (RFC 5280 allows no fraction there)', async () => {
    // Prepare
    const madeAt = new Date('2046-03-01T10:20:30.789Z');

    // Act
    const longCa = await createCertificateAuthority('long-ca', { now: madeAt, validityDays: 365 * 10 });
    const longLeaf = await issueCertificate(longCa, {
      commonName: 'late',
      hosts: ['late.example.com'],
      now: madeAt,
    });

    // Assess
    for (const pem of [longCa.certPem, longLeaf.certPem]) {
      const cert = new X509Certificate(pem);
      expect(new Date(cert.validFrom).toISOString()).toBe('2046-03-01T10:20:30.000Z');
      const times = execFileSync('openssl', ['asn1parse'], { input: pem, encoding: 'utf8' })
        .split('\n')
        .filter((line) => /UTCTIME|GENERALIZEDTIME/.test(line))
        .map((line) => line.split(':').slice(3).join(':').trim());
      expect(times[0]).toBe('460301102030Z');
      expect(times[1]).toMatch(/^20\d{10}30Z$/);
    }
  });
});

describe('the facts a leaf is issued with', () => {
  it.each([
    [
      'a plain name at a time with milliseconds',
      'router-site-server-a1',
      new Date('2026-12-01T08:00:59.999Z'),
    ],
    ['a name a distinguished name escapes', 'edge, "north" + 1', new Date('2026-12-01T08:00:00.001Z')],
    ['a UTF-8 name', 'périphérie', now],
  ])('are what the certificate says (%s), for a hundred serials', async (_case, commonName, madeAt) => {
    for (let i = 0; i < 100; i++) {
      // Act
      const issued =
        i % 2 === 0
          ? await issueCertificate(ca, { commonName, hosts: ['10.0.0.9'], now: madeAt })
          : await selfSignedLeaf({ commonName, hosts: ['10.0.0.9'], now: madeAt });

      // Assess
      expect(issued.facts).toEqual(certificateFacts(issued.certPem));
    }
  });
});
