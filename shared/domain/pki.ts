import {
  createHash,
  createPrivateKey,
  generateKeyPair,
  type KeyObject,
  randomBytes,
  sign,
  X509Certificate,
} from 'node:crypto';
import { isIP } from 'node:net';
import { promisify } from 'node:util';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import {
  AlgorithmIdentifier,
  AttributeTypeAndValue,
  AttributeValue,
  AuthorityKeyIdentifier,
  BasicConstraints,
  Certificate,
  ExtendedKeyUsage,
  Extension,
  Extensions,
  GeneralName,
  id_ce_authorityKeyIdentifier,
  id_ce_basicConstraints,
  id_ce_extKeyUsage,
  id_ce_keyUsage,
  id_ce_subjectAltName,
  id_ce_subjectKeyIdentifier,
  id_kp_clientAuth,
  id_kp_serverAuth,
  KeyIdentifier,
  KeyUsage,
  KeyUsageFlags,
  Name,
  RelativeDistinguishedName,
  SubjectAlternativeName,
  SubjectKeyIdentifier,
  type SubjectPublicKeyInfo,
  TBSCertificate,
  Validity,
  Version,
} from '@peculiar/asn1-x509';
import { RawData } from 'asn1js';

/**
 * The fleet's certificate profile. Every key fogbridge makes is ECDSA P-256: an agent needs four leaves
 * and a fleet a handful of CAs, and a P-256 key is made and signs in well under a millisecond where an
 * RSA 2048 key takes a quarter of a second of CPU to make and about 1.5 ms to sign (measured with
 * `npm run bench -- --scenarios s7`). An imported CA may be RSA, or EC on P-256, P-384 or P-521: a leaf
 * is signed with its issuer's key, whatever the leaf's own. CAs: CA:TRUE, keyCertSign and cRLSign.
 * Leaves: CA:FALSE, digitalSignature, serverAuth and clientAuth, subject alternative names from the
 * agent's host. Every certificate is signed SHA-256 (SHA-384/512 by a P-384/P-521 CA) and has a
 * CN-only subject. Serials are 16 random bytes with the top bit clear, so they are always positive (a
 * negative serial is refused by Go's x509 parser, which NATS and Edgelet use). Keys are PEM as OpenSSL
 * writes them (`EC PRIVATE KEY`, SEC 1; an imported RSA key as `RSA PRIVATE KEY`), read by the Router
 * (OpenSSL) and by NATS (Go's crypto/tls).
 */

/** Days in "60 months", the validity the reference controller gives (60 × 30.44). */
export const FLEET_CA_VALIDITY_DAYS = 60 * 30.44;
/** Router server certificates: five years. */
export const ROUTER_LEAF_VALIDITY_DAYS = 5 * 365;
const DAY_MS = 24 * 60 * 60 * 1000;

export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

/**
 * A positive 128-bit serial in hex (first byte below 0x80, never zero), written as DER writes an
 * INTEGER: a leading zero byte stays only in front of a byte with its top bit set (Go's parser refuses
 * any other leading zero).
 */
export function certificateSerial(random: (size: number) => Buffer = randomBytes): string {
  for (;;) {
    const bytes = random(16);
    bytes[0]! &= 0x7f;
    if (!bytes.some((byte) => byte !== 0)) continue;
    let start = 0;
    while (bytes[start] === 0 && bytes[start + 1]! < 0x80) start += 1;
    return bytes.subarray(start).toString('hex');
  }
}

/** A subject alternative name: a DNS name or an IP address. */
export type SubjectAltName = { type: 'dns'; value: string } | { type: 'ip'; value: string };

/** One SAN per name; a dotted IPv4 address is both an IP and a DNS entry (as the reference issues it). */
export function subjectAltNames(hosts: readonly string[]): SubjectAltName[] {
  const names: SubjectAltName[] = [];
  for (const host of [...new Set(hosts.map((entry) => entry.trim()).filter(Boolean))]) {
    const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
    if (isIP(bare) === 4) names.push({ type: 'ip', value: bare }, { type: 'dns', value: bare });
    else if (isIP(bare) === 6) names.push({ type: 'ip', value: bare });
    else names.push({ type: 'dns', value: bare });
  }
  return names;
}

const newKeyPair = promisify(generateKeyPair);

/** A new key pair as its certificate and its holder need it: the public key's DER, the private key's PEM. */
interface NewKeyPair {
  spki: Buffer;
  keyPem: string;
}

/**
 * An ECDSA P-256 key pair (a CA's or a leaf's), made and encoded by Node's native crypto off the event
 * loop: a leaf's own private key never signs here, so it is only ever needed as PEM.
 */
async function newP256KeyPair(): Promise<NewKeyPair> {
  const { publicKey, privateKey } = await newKeyPair('ec', {
    namedCurve: 'prime256v1',
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'sec1', format: 'pem' },
  });
  return { spki: publicKey, keyPem: privateKey };
}

const SHA256_WITH_RSA = '1.2.840.113549.1.1.11';
/** The ECDSA signature algorithm and its digest for each curve a CA key may be on. */
const ECDSA_BY_CURVE: Record<string, { oid: string; hash: string }> = {
  prime256v1: { oid: '1.2.840.10045.4.3.2', hash: 'sha256' },
  secp384r1: { oid: '1.2.840.10045.4.3.3', hash: 'sha384' },
  secp521r1: { oid: '1.2.840.10045.4.3.4', hash: 'sha512' },
};

/** How a key signs a certificate, or undefined for a key that cannot sign one here. */
function signatureScheme(key: KeyObject): { algorithm: AlgorithmIdentifier; hash: string } | undefined {
  if (key.asymmetricKeyType === 'rsa')
    return {
      algorithm: new AlgorithmIdentifier({ algorithm: SHA256_WITH_RSA, parameters: null }),
      hash: 'sha256',
    };
  const ecdsa =
    key.asymmetricKeyType === 'ec' ? ECDSA_BY_CURVE[key.asymmetricKeyDetails?.namedCurve ?? ''] : undefined;
  // An ECDSA AlgorithmIdentifier has no parameters at all (RFC 5758 §3.2).
  return ecdsa && { algorithm: new AlgorithmIdentifier({ algorithm: ecdsa.oid }), hash: ecdsa.hash };
}

/** Characters an X.520 PrintableString may hold. */
const PRINTABLE_STRING = /^[A-Za-z0-9 '()+,\-./:=?]*$/;

/** `CN=<commonName>`: a PrintableString when it fits one, else a UTF8String (RFC 5280 §4.1.2.6). */
function commonNameOnly(commonName: string): Name {
  const value = PRINTABLE_STRING.test(commonName)
    ? new AttributeValue({ printableString: commonName })
    : new AttributeValue({ utf8String: commonName });
  return new Name([new RelativeDistinguishedName([new AttributeTypeAndValue({ type: '2.5.4.3', value })])]);
}

function extension(extnID: string, value: unknown, critical = false): Extension {
  return new Extension({ extnID, critical, extnValue: new OctetString(AsnConvert.serialize(value)) });
}

/**
 * A P-256 public key as SubjectPublicKeyInfo in DER: this header (the ecPublicKey and prime256v1
 * identifiers, then a BIT STRING of 66 bytes with no unused bits) and the 65-byte uncompressed point.
 */
const P256_SPKI_HEADER = Buffer.from('3059301306072a8648ce3d020106082a8648ce3d030107034200', 'hex');

/**
 * The key identifier RFC 5280 §4.2.1.2 (1) describes, SHA-1 of the subjectPublicKey bits, of a key Node
 * encoded as P-256 SubjectPublicKeyInfo (anything else is refused rather than read wrong).
 */
function keyIdentifier(spki: Buffer): Buffer {
  if (
    spki.length !== P256_SPKI_HEADER.length + 65 ||
    !spki.subarray(0, P256_SPKI_HEADER.length).equals(P256_SPKI_HEADER)
  )
    throw new Error('not a P-256 SubjectPublicKeyInfo');
  return createHash('sha1').update(spki.subarray(P256_SPKI_HEADER.length)).digest();
}

/**
 * Bytes already in DER as an element of a structure asn1js writes: a constructed value hands each of its
 * elements the writer it assembles into (RawData on its own only answers its bytes).
 */
class EncodedBlock extends RawData {
  override toBER(sizeOnly?: boolean, writer?: { write(buffer: ArrayBuffer): void }): ArrayBuffer {
    const der = super.toBER(sizeOnly);
    if (!writer) return der;
    writer.write(der);
    return new ArrayBuffer(0);
  }
}

/**
 * A part of a certificate already in DER, placed as it is where the schema expects its type: the
 * serializer asks a value that converts itself for its ASN.1 (`toASN`) instead of walking its schema.
 * A leaf's public key, the extensions every leaf shares and its issuer's parts are encoded once, not
 * once per certificate, and the signed body is not encoded a second time inside the certificate.
 */
class Encoded {
  constructor(private readonly der: ArrayBuffer | Uint8Array) {}

  static of(value: unknown): Encoded {
    return new Encoded(AsnConvert.serialize(value));
  }

  toASN(): EncodedBlock {
    return new EncodedBlock({ data: this.der });
  }

  fromASN(): this {
    throw new Error('an encoded part is only written');
  }

  /** In a field typed for the value it stands for. */
  as<T>(): T {
    return this as unknown as T;
  }
}

/** What every certificate is made of, before its issuer and extensions. */
interface Body {
  subject: Name;
  issuer: Name | Encoded;
  spki: Buffer;
  notBefore: Date;
  notAfter: Date;
  extensions: (Extension | Encoded)[];
}

/** How a signer signs: its key, the digest and the AlgorithmIdentifier it names (encoded once). */
interface Signer {
  key: KeyObject;
  hash: string;
  algorithm: Encoded;
}

function signerOf(key: KeyObject): Signer {
  const scheme = signatureScheme(key);
  if (!scheme) throw new Error(`a ${key.asymmetricKeyType} key cannot sign certificates here`);
  return { key, hash: scheme.hash, algorithm: Encoded.of(scheme.algorithm) };
}

/** A certificate made here: as PEM, with its DER and its serial (hex, as DER writes the INTEGER). */
interface MadeCertificate {
  certPem: string;
  der: Buffer;
  serial: string;
}

/** The certificate: the TBS part written in DER and signed with `signer`. */
function signedCertificate(body: Body, signer: Signer): MadeCertificate {
  const serial = certificateSerial();
  const tbsCertificate = new TBSCertificate({
    version: Version.v3,
    serialNumber: new Uint8Array(Buffer.from(serial, 'hex')).buffer,
    signature: signer.algorithm.as<AlgorithmIdentifier>(),
    // An issuer already encoded stands where its Name goes (see Encoded).
    issuer: body.issuer as Name,
    validity: new Validity({ notBefore: body.notBefore, notAfter: body.notAfter }),
    subject: body.subject,
    subjectPublicKeyInfo: new Encoded(body.spki).as<SubjectPublicKeyInfo>(),
    extensions: new Extensions(body.extensions as Extension[]),
  });
  const tbs = Buffer.from(AsnConvert.serialize(tbsCertificate));
  const certificate = new Certificate({
    tbsCertificate: new Encoded(tbs).as<TBSCertificate>(),
    signatureAlgorithm: signer.algorithm.as<AlgorithmIdentifier>(),
    signatureValue: new Uint8Array(sign(signer.hash, tbs, signer.key)).buffer,
  });
  const der = Buffer.from(AsnConvert.serialize(certificate));
  return { certPem: pem('CERTIFICATE', der), der, serial };
}

/** DER as PEM (RFC 7468): base64 in lines of 64 characters between the label's lines. */
function pem(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

/** A self-signed certificate authority whose subject is `CN=<commonName>`. */
export async function createCertificateAuthority(
  commonName: string,
  options: { validityDays?: number; now?: Date } = {},
): Promise<KeyPairPem> {
  const keys = await newP256KeyPair();
  const notBefore = options.now ?? new Date();
  const subject = commonNameOnly(commonName);
  const { certPem } = signedCertificate(
    {
      subject,
      issuer: subject,
      spki: keys.spki,
      notBefore,
      notAfter: new Date(
        notBefore.getTime() + Math.round((options.validityDays ?? FLEET_CA_VALIDITY_DAYS) * DAY_MS),
      ),
      extensions: [
        extension(id_ce_basicConstraints, new BasicConstraints({ cA: true }), true),
        extension(id_ce_keyUsage, new KeyUsage(KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign), true),
        extension(id_ce_subjectKeyIdentifier, new SubjectKeyIdentifier(keyIdentifier(keys.spki))),
      ],
    },
    signerOf(createPrivateKey(keys.keyPem)),
  );
  return { certPem, keyPem: keys.keyPem };
}

/** What a leaf is issued as: its CN, the names it is for, how long it lasts from when. */
interface LeafRequest {
  commonName: string;
  hosts: readonly string[];
  validityDays?: number;
  now?: Date;
}

/** What a leaf takes from the CA that signs it. */
interface Issuer {
  name: Encoded;
  notAfter: Date;
  /** The authority key identifier extension naming the CA's key, when the CA says its key identifier. */
  authorityKeyIdentifier?: Encoded;
  signer: Signer;
}

/** CAs parsed for signing, by certificate (a burst of leaves is signed by the same few CAs). */
const issuers = new Map<string, { keyPem: string; issuer: Issuer }>();
const ISSUERS_KEPT = 32;

function issuerOf(ca: KeyPairPem): Issuer {
  const known = issuers.get(ca.certPem);
  if (known?.keyPem === ca.keyPem) return known.issuer;
  const issuer = parseIssuer(ca);
  if (issuers.size >= ISSUERS_KEPT) issuers.delete(issuers.keys().next().value!);
  issuers.set(ca.certPem, { keyPem: ca.keyPem, issuer });
  return issuer;
}

function parseIssuer(ca: KeyPairPem): Issuer {
  const parsed = new X509Certificate(ca.certPem);
  const tbs = AsnConvert.parse(parsed.raw, Certificate).tbsCertificate;
  const ski = tbs.extensions?.find((entry) => entry.extnID === id_ce_subjectKeyIdentifier);
  const keyIdentifier = ski && AsnConvert.parse(ski.extnValue, SubjectKeyIdentifier).buffer;
  return {
    // The CA's subject as it was parsed, so the leaf's issuer is byte for byte that name.
    name: Encoded.of(tbs.subject),
    notAfter: new Date(parsed.validTo),
    ...(keyIdentifier
      ? {
          authorityKeyIdentifier: Encoded.of(
            extension(
              id_ce_authorityKeyIdentifier,
              new AuthorityKeyIdentifier({ keyIdentifier: new KeyIdentifier(keyIdentifier) }),
            ),
          ),
        }
      : {}),
    signer: signerOf(createPrivateKey(ca.keyPem)),
  };
}

/** The extensions every leaf has, the same bytes in each. */
const LEAF_EXTENSIONS = [
  extension(id_ce_basicConstraints, new BasicConstraints({ cA: false }), true),
  // An ECDSA key signs the handshake and never enciphers a key: digitalSignature is all it does.
  extension(id_ce_keyUsage, new KeyUsage(KeyUsageFlags.digitalSignature), true),
  extension(id_ce_extKeyUsage, new ExtendedKeyUsage([id_kp_serverAuth, id_kp_clientAuth])),
].map(Encoded.of);

/**
 * A server-and-client leaf for `hosts`: signed by `ca`, valid until its CA is at the latest; or, with no
 * CA, self-signed (its own trust anchor, CA:FALSE).
 */
async function leafCertificate(ca: KeyPairPem | undefined, leaf: LeafRequest): Promise<IssuedLeaf> {
  const keys = await newP256KeyPair();
  const issuer = ca ? issuerOf(ca) : undefined;
  const subject = commonNameOnly(leaf.commonName);
  const notBefore = leaf.now ?? new Date();
  let notAfter = new Date(
    notBefore.getTime() + Math.round((leaf.validityDays ?? ROUTER_LEAF_VALIDITY_DAYS) * DAY_MS),
  );
  // A leaf never outlives its CA: past the CA's notAfter no peer would accept it anyway, and a renewal
  // that cannot reach further than the CA is what says the CA itself is due.
  if (issuer && notAfter > issuer.notAfter) notAfter = issuer.notAfter;
  const made = signedCertificate(
    {
      subject,
      issuer: issuer?.name ?? subject,
      spki: keys.spki,
      notBefore,
      notAfter,
      extensions: [
        ...LEAF_EXTENSIONS,
        extension(
          id_ce_subjectAltName,
          new SubjectAlternativeName(subjectAltNames(leaf.hosts).map(generalName)),
        ),
        extension(id_ce_subjectKeyIdentifier, new SubjectKeyIdentifier(keyIdentifier(keys.spki))),
        ...(issuer?.authorityKeyIdentifier ? [issuer.authorityKeyIdentifier] : []),
      ],
    },
    issuer?.signer ?? signerOf(createPrivateKey(keys.keyPem)),
  );
  return {
    certPem: made.certPem,
    keyPem: keys.keyPem,
    facts: madeFacts(made, leaf.commonName, notBefore, notAfter) ?? certificateFacts(made.certPem),
  };
}

/** A leaf as issued: its certificate and key, and its facts. */
export interface IssuedLeaf extends KeyPairPem {
  facts: CertificateFacts;
}

/** A common name every reader prints as it is (no character a distinguished name escapes). */
const PLAIN_COMMON_NAME = /^[A-Za-z0-9._-]+$/;

/**
 * A leaf's facts from what it was made of, as `certificateFacts` reads them back from the certificate
 * (times in whole seconds as the certificate holds them, the serial as the INTEGER's value in upper
 * case, the SHA-256 fingerprint of the DER): parsing it again would cost as much as making it. Only for
 * a plain common name (undefined otherwise, and the certificate is parsed).
 */
function madeFacts(
  made: MadeCertificate,
  commonName: string,
  notBefore: Date,
  notAfter: Date,
): CertificateFacts | undefined {
  if (!PLAIN_COMMON_NAME.test(commonName)) return undefined;
  const wholeSeconds = (date: Date) => new Date(Math.floor(date.getTime() / 1000) * 1000).toISOString();
  return {
    subject: commonName,
    isCA: false,
    validFrom: wholeSeconds(notBefore),
    validTo: wholeSeconds(notAfter),
    serialNumber: made.serial.replace(/^00/, '').toUpperCase(),
    fingerprint: (createHash('sha256').update(made.der).digest('hex').toUpperCase().match(/../g) ?? []).join(
      ':',
    ),
  };
}

function generalName(name: SubjectAltName): GeneralName {
  return name.type === 'ip'
    ? new GeneralName({ iPAddress: name.value })
    : new GeneralName({ dNSName: name.value });
}

/** A server-and-client certificate for `hosts`, signed by `ca`, valid until its CA is at the latest. */
export function issueCertificate(ca: KeyPairPem, leaf: LeafRequest): Promise<IssuedLeaf> {
  return leafCertificate(ca, leaf);
}

/** A self-signed server-and-client certificate for `hosts` (its own trust anchor; CA:FALSE). */
export function selfSignedLeaf(leaf: LeafRequest): Promise<IssuedLeaf> {
  return leafCertificate(undefined, leaf);
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
 * Checks an imported CA: the certificate parses, says CA:TRUE, the key can sign certificates here (RSA,
 * or EC on P-256, P-384 or P-521) and belongs to the certificate. Returns the reason it cannot sign, or
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
  let key: KeyObject;
  try {
    key = createPrivateKey(keyPem);
  } catch {
    return 'has a key that is not a PEM private key';
  }
  if (!signatureScheme(key)) {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    return `has a key of type ${key.asymmetricKeyType}${curve ? ` on ${curve}` : ''}; an RSA key or an EC key on P-256, P-384 or P-521 is needed`;
  }
  if (!cert.checkPrivateKey(key)) return 'has a key that does not belong to its certificate';
  return undefined;
}
