import { createPrivateKey, randomBytes, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import forge from 'node-forge';

/**
 * The fleet's certificate profile (CONTROL-PLANE.md §7.3, §8.1): RSA 2048 keys, SHA-256 signatures,
 * CN-only subjects, CAs with CA:TRUE and keyCertSign/cRLSign, leafs with CA:FALSE, digitalSignature and
 * keyEncipherment, serverAuth and clientAuth, and subject alternative names from the agent's host.
 * Serials are 16 random bytes with the top bit clear, so they are always positive (a negative serial
 * is refused by Go's x509 parser, which NATS and Edgelet use). Keys are PKCS#1 PEM, as the Router and
 * NATS read them.
 */

/** Days in the seeds' "60 months" (60 × 30.44). */
export const FLEET_CA_VALIDITY_DAYS = 60 * 30.44;
/** Router server certificates: five years. */
export const ROUTER_LEAF_VALIDITY_DAYS = 5 * 365;
const DAY_MS = 24 * 60 * 60 * 1000;

export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

/** A positive 128-bit serial in hex (first byte below 0x80, never zero). */
export function certificateSerial(random: (size: number) => Buffer = randomBytes): string {
  for (;;) {
    const bytes = random(16);
    bytes[0]! &= 0x7f;
    if (bytes.some((byte) => byte !== 0)) return bytes.toString('hex');
  }
}

/** One SAN per name; a dotted IPv4 address is both an IP and a DNS entry (as the reference issues it). */
export function subjectAltNames(
  hosts: readonly string[],
): ({ type: 2; value: string } | { type: 7; ip: string })[] {
  const names: ({ type: 2; value: string } | { type: 7; ip: string })[] = [];
  for (const host of [...new Set(hosts.map((entry) => entry.trim()).filter(Boolean))]) {
    const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
    if (isIP(bare) === 4) names.push({ type: 7, ip: bare }, { type: 2, value: bare });
    else if (isIP(bare) === 6) names.push({ type: 7, ip: bare });
    else names.push({ type: 2, value: bare });
  }
  return names;
}

function newKeyPair(): forge.pki.rsa.KeyPair {
  // node-forge hands RSA key generation to Node's native crypto when it can.
  return forge.pki.rsa.generateKeyPair({ bits: 2048, e: 0x10001 });
}

function baseCertificate(
  publicKey: forge.pki.PublicKey,
  commonName: string,
  validityDays: number,
  now: Date,
) {
  const cert = forge.pki.createCertificate();
  cert.publicKey = publicKey;
  cert.serialNumber = certificateSerial();
  cert.validity.notBefore = now;
  cert.validity.notAfter = new Date(now.getTime() + Math.round(validityDays * DAY_MS));
  cert.setSubject([{ name: 'commonName', value: commonName }]);
  return cert;
}

/** A self-signed certificate authority whose subject is `CN=<commonName>`. */
export function createCertificateAuthority(
  commonName: string,
  options: { validityDays?: number; now?: Date } = {},
): KeyPairPem {
  const keys = newKeyPair();
  const cert = baseCertificate(
    keys.publicKey,
    commonName,
    options.validityDays ?? FLEET_CA_VALIDITY_DAYS,
    options.now ?? new Date(),
  );
  cert.setIssuer(cert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: forge.pki.privateKeyToPem(keys.privateKey) };
}

/** A server-and-client certificate for `hosts`, signed by `ca`. */
export function issueCertificate(
  ca: KeyPairPem,
  leaf: { commonName: string; hosts: readonly string[]; validityDays?: number; now?: Date },
): KeyPairPem {
  const caCert = forge.pki.certificateFromPem(ca.certPem);
  const caKey = forge.pki.privateKeyFromPem(ca.keyPem);
  const keys = newKeyPair();
  const cert = baseCertificate(
    keys.publicKey,
    leaf.commonName,
    leaf.validityDays ?? ROUTER_LEAF_VALIDITY_DAYS,
    leaf.now ?? new Date(),
  );
  cert.setIssuer(caCert.subject.attributes);
  const caKeyId = (caCert.getExtension('subjectKeyIdentifier') as { subjectKeyIdentifier?: string } | null)
    ?.subjectKeyIdentifier;
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
    { name: 'subjectAltName', altNames: subjectAltNames(leaf.hosts) },
    { name: 'subjectKeyIdentifier' },
    ...(caKeyId ? [{ name: 'authorityKeyIdentifier', keyIdentifier: forge.util.hexToBytes(caKeyId) }] : []),
  ]);
  cert.sign(caKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: forge.pki.privateKeyToPem(keys.privateKey) };
}

/** What the API and the reissue rules need to know of a certificate. */
export interface CertificateFacts {
  subject: string;
  isCA: boolean;
  validFrom: string;
  validTo: string;
  serialNumber: string;
  fingerprint: string;
}

export function certificateFacts(certPem: string): CertificateFacts {
  const cert = new X509Certificate(certPem);
  return {
    subject: cert.subject.replace(/^CN=/, ''),
    isCA: cert.ca,
    validFrom: new Date(cert.validFrom).toISOString(),
    validTo: new Date(cert.validTo).toISOString(),
    serialNumber: cert.serialNumber,
    fingerprint: cert.fingerprint256,
  };
}

/**
 * Checks an imported CA: the certificate parses, says CA:TRUE, the key is an RSA key (what the fleet's
 * certificates are signed with) and belongs to the certificate. Returns the reason it cannot sign, or
 * undefined.
 */
export function certificateAuthorityProblem(certPem: string, keyPem: string): string | undefined {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch {
    return 'is not a PEM certificate';
  }
  if (!cert.ca) return 'is not a certificate authority (basicConstraints CA:TRUE is missing)';
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(keyPem);
  } catch {
    return 'has a key that is not a PEM private key';
  }
  if (key.asymmetricKeyType !== 'rsa') return `has a ${key.asymmetricKeyType} key; an RSA key is needed`;
  if (!cert.checkPrivateKey(key)) return 'has a key that does not belong to its certificate';
  return undefined;
}
