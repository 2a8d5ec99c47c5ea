import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  certificateAuthorityProblem,
  certificateSerial,
  createCertificateAuthority,
  FLEET_CA_VALIDITY_DAYS,
  issueCertificate,
  subjectAltNames,
} from '../../shared/domain/pki.js';

/**
 * The certificate profile of CONTROL-PLANE.md §7.3, checked on certificates node:crypto parses (an
 * independent X.509 implementation from node-forge, which issues them).
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

  it('has an RSA 2048 key in PKCS#1 PEM that matches the certificate', () => {
    // Assess
    expect(ca.keyPem.startsWith('-----BEGIN RSA PRIVATE KEY-----')).toBe(true);
    expect(cert.publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
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

    // Assess: the all-zero draw is skipped
    expect(first).toBe(`7f${'ff'.repeat(15)}`);
    expect(second).toBe(`00${'80'.repeat(15)}`);
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
    [['a.example.com'], [{ type: 2, value: 'a.example.com' }]],
    [
      ['10.1.2.3'],
      [
        { type: 7, ip: '10.1.2.3' },
        { type: 2, value: '10.1.2.3' },
      ],
    ],
    [['[fe80::1]'], [{ type: 7, ip: 'fe80::1' }]],
    [[' x ', 'x', ''], [{ type: 2, value: 'x' }]],
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
  ])('%s: %s', (_case, certPem, keyPem, problem) => {
    // Act / Assess
    expect(certificateAuthorityProblem(certPem, keyPem)).toBe(problem);
  });
});
