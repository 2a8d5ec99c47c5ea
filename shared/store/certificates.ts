import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { nowMs } from '../clock.js';
import {
  certificateFacts,
  createCertificateAuthority,
  type IssuedLeaf,
  issueCertificate,
  selfSignedLeaf,
} from '../domain/pki.js';
import { openSecret, sealSecret } from '../secrets.js';
import { conditionalWrite, documentClient, getItem, indexes, keys, tableName } from './client.js';
import { queryIndex, queryPage } from './query.js';

/**
 * A certificate authority or an issued certificate. The private key is stored sealed (shared/secrets.ts)
 * and only ever unsealed to sign or to hand an agent its own key. `version` grows with every reissue;
 * it is the version of the volume mount the agent receives the files through.
 */
export interface CertificateRow {
  name: string;
  isCA: boolean;
  subject: string;
  /** The names the certificate was issued for (its subject alternative names). */
  hosts: string[];
  /** The CA that signed it (itself for a self-signed CA), and that CA's fingerprint at the time. */
  signedBy: string;
  signerFingerprint: string;
  validFrom: string;
  validTo: string;
  serialNumber: string;
  fingerprint: string;
  certPem: string;
  /** The CA chain an agent trusts with it (`ca.crt`). */
  caPem: string;
  keySealed: string;
  /**
   * Where it came from: a CA fogbridge made or imported, a leaf issued to an agent (`issued`), or a
   * certificate a user asked for with POST /api/v3/certificates (`user`).
   */
  source: 'self-signed' | 'k8s-secret' | 'issued' | 'user';
  /** The agent it belongs to (issued certificates). */
  agentUuid: string | null;
  /** The lifetime it was asked for, in days (a renewal asks for the same; absent: its own span). */
  validityDays?: number;
  /** A CA being rotated: the key and certificate it replaces, and how far the fleet has come. */
  rotation?: CaRotation;
  version: number;
  createdAt: string;
  updatedAt: string;
}

/**
 * A CA rotation in progress. `trust`: every trust file gains the new CA while leaves are still signed by
 * the old one; `reissue`: leaves are signed by the new CA, both still trusted. When every site holds
 * its reissued leaf, the rotation ends and the old CA leaves the trust files.
 */
export interface CaRotation {
  phase: 'trust' | 'reissue';
  previousCertPem: string;
  previousKeySealed: string;
  previousFingerprint: string;
  startedAt: string;
  /** When the phase began. */
  phaseSince: string;
}

/** What signs under a CA now: the CA it replaces while the fleet learns to trust the new one. */
export function signerOf(ca: CertificateRow): { certPem: string; keySealed: string; fingerprint: string } {
  return ca.rotation?.phase === 'trust'
    ? {
        certPem: ca.rotation.previousCertPem,
        keySealed: ca.rotation.previousKeySealed,
        fingerprint: ca.rotation.previousFingerprint,
      }
    : { certPem: ca.certPem, keySealed: ca.keySealed, fingerprint: ca.fingerprint };
}

/** The trust file (`ca.crt`) a leaf of this CA is delivered with: both CAs while one replaces the other. */
export function trustOf(ca: CertificateRow): string {
  if (!ca.rotation) return ca.caPem;
  const trimmed = ca.caPem.endsWith('\n') ? ca.caPem : `${ca.caPem}\n`;
  return `${trimmed}${ca.rotation.previousCertPem}`;
}

/** What a leaf is issued as: its name, the CN and names it carries, and how long it is asked to last. */
export interface LeafSpec {
  name: string;
  commonName: string;
  hosts: readonly string[];
  validityDays?: number;
}

/**
 * A leaf signed under `ca` (by whichever key signs under it now, see `signerOf`), as stored: a new
 * serial and key each time, never valid past the signing CA, `version` one past what it replaces.
 */
export async function signedLeafRow(
  spec: LeafSpec,
  ca: CertificateRow,
  owner: { agentUuid: string | null; source: CertificateRow['source'] },
  existing?: CertificateRow,
): Promise<CertificateRow> {
  const signer = signerOf(ca);
  const issued = await issueCertificate(
    { certPem: signer.certPem, keyPem: await openSecret(signer.keySealed, ca.name) },
    leafRequest(spec),
  );
  return leafRow(
    spec,
    issued,
    { name: ca.name, fingerprint: signer.fingerprint, trust: trustOf(ca) },
    owner,
    existing,
  );
}

/** A self-signed leaf (its own signer and trust anchor) as stored. */
export async function selfSignedLeafRow(
  spec: LeafSpec,
  owner: { agentUuid: string | null; source: CertificateRow['source'] },
  existing?: CertificateRow,
): Promise<CertificateRow> {
  const issued = await selfSignedLeaf(leafRequest(spec));
  return leafRow(
    spec,
    issued,
    { name: spec.name, fingerprint: issued.facts.fingerprint, trust: issued.certPem },
    owner,
    existing,
  );
}

const leafRequest = (spec: LeafSpec) => ({
  commonName: spec.commonName,
  hosts: spec.hosts,
  now: new Date(nowMs()),
  ...(spec.validityDays ? { validityDays: spec.validityDays } : {}),
});

/** An issued leaf's row: its facts, its key sealed, the signer named, `version` one past what it replaces. */
async function leafRow(
  spec: LeafSpec,
  issued: IssuedLeaf,
  signer: { name: string; fingerprint: string; trust: string },
  owner: { agentUuid: string | null; source: CertificateRow['source'] },
  existing: CertificateRow | undefined,
): Promise<CertificateRow> {
  const { facts } = issued;
  const now = new Date(nowMs()).toISOString();
  return {
    name: spec.name,
    isCA: false,
    subject: facts.subject,
    hosts: [...spec.hosts],
    signedBy: signer.name,
    signerFingerprint: signer.fingerprint,
    validFrom: facts.validFrom,
    validTo: facts.validTo,
    serialNumber: facts.serialNumber,
    fingerprint: facts.fingerprint,
    certPem: issued.certPem,
    caPem: signer.trust,
    keySealed: await sealSecret(issued.keyPem, spec.name),
    source: owner.source,
    agentUuid: owner.agentUuid,
    ...(spec.validityDays ? { validityDays: spec.validityDays } : {}),
    version: (existing?.version ?? 0) + 1,
    createdAt: existing?.createdAt ?? now,
    updatedAt: now,
  };
}

function indexAttributes(row: CertificateRow) {
  return {
    GSI1PK: row.isCA ? 'CA' : 'CERT',
    GSI1SK: row.name,
    ...(row.agentUuid ? { GSI3PK: `CERTAGENT#${row.agentUuid}`, GSI3SK: row.name } : {}),
  };
}

export function getCertificate(name: string): Promise<CertificateRow | undefined> {
  return getItem<CertificateRow>(keys.certificate(name));
}

/** A certificate as the store holds it (for a batch write with other items). */
export function certificateItem(row: CertificateRow): Record<string, unknown> {
  return { ...keys.certificate(row.name), ...row, ...indexAttributes(row) };
}

/** Stores a new certificate; false when one of that name exists (the caller reads and decides). */
export function putNewCertificate(row: CertificateRow): Promise<boolean> {
  return conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: certificateItem(row),
      ConditionExpression: 'attribute_not_exists(PK)',
    }),
  );
}

/** Replaces a certificate read at `expectedVersion` (a reissue); false when someone else wrote first. */
export function replaceCertificate(row: CertificateRow, expectedVersion: number): Promise<boolean> {
  return conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: certificateItem(row),
      ConditionExpression: '#v = :v',
      ExpressionAttributeNames: { '#v': 'version' },
      ExpressionAttributeValues: { ':v': expectedVersion },
    }),
  );
}

export async function deleteCertificate(name: string): Promise<void> {
  await documentClient().send(new DeleteCommand({ TableName: tableName(), Key: keys.certificate(name) }));
}

const strip = (item: Record<string, unknown>): CertificateRow => {
  const { PK, SK, GSI1PK, GSI1SK, GSI3PK, GSI3SK, ...row } = item;
  return row as unknown as CertificateRow;
};

export async function listCertificateAuthorities(): Promise<CertificateRow[]> {
  return (await queryIndex<Record<string, unknown>>(indexes.byKind, 'CA')).map(strip);
}

/** Every CA and certificate, CAs first. */
export async function listAllCertificates(): Promise<CertificateRow[]> {
  const [cas, issued] = await Promise.all([listCertificateAuthorities(), listIssuedCertificates()]);
  return [...cas, ...issued];
}

export async function listIssuedCertificates(): Promise<CertificateRow[]> {
  return (await queryIndex<Record<string, unknown>>(indexes.byKind, 'CERT')).map(strip);
}

/** An agent's certificates (from the index; each is re-read by name where it matters). */
export async function listAgentCertificates(agentUuid: string): Promise<CertificateRow[]> {
  return (await queryIndex<Record<string, unknown>>(indexes.bySite, `CERTAGENT#${agentUuid}`)).map(strip);
}

/** A new self-signed CA as stored (the API's self-signed CAs are made the same way). */
export async function selfSignedCertificateAuthorityRow(
  name: string,
  subject: string,
  validityDays: number,
): Promise<CertificateRow> {
  const pem = await createCertificateAuthority(subject, { validityDays, now: new Date(nowMs()) });
  const facts = certificateFacts(pem.certPem);
  const now = new Date(nowMs()).toISOString();
  return {
    name,
    isCA: true,
    subject: facts.subject,
    hosts: [],
    signedBy: name,
    signerFingerprint: facts.fingerprint,
    validFrom: facts.validFrom,
    validTo: facts.validTo,
    serialNumber: facts.serialNumber,
    fingerprint: facts.fingerprint,
    certPem: pem.certPem,
    caPem: pem.certPem,
    keySealed: await sealSecret(pem.keyPem, name),
    source: 'self-signed',
    agentUuid: null,
    validityDays,
    version: 1,
    createdAt: now,
    updatedAt: now,
  };
}

/**
 * Deletes the issued certificates that belong to an agent that is gone: those the index lists under
 * it and those named in `names`, each only if it still names the agent as its owner.
 */
export async function deleteCertificatesOf(
  agentUuid: string,
  names: readonly string[] = [],
): Promise<number> {
  const listed = (await listAgentCertificates(agentUuid)).map((row) => row.name);
  let deleted = 0;
  for (const name of new Set([...names, ...listed])) {
    const removed = await conditionalWrite(
      new DeleteCommand({
        TableName: tableName(),
        Key: keys.certificate(name),
        ConditionExpression: 'agentUuid = :agent',
        ExpressionAttributeValues: { ':agent': agentUuid },
      }),
    );
    if (removed) deleted += 1;
  }
  return deleted;
}

/** One page of the issued certificates (in name order, after `cursor`) and where the next starts. */
export async function listIssuedCertificatePage(
  cursor: Record<string, unknown> | undefined,
  limit: number,
): Promise<{ certificates: CertificateRow[]; next: Record<string, unknown> | undefined }> {
  const { items, next } = await queryPage<Record<string, unknown>>(
    {
      IndexName: indexes.byKind,
      KeyConditionExpression: 'GSI1PK = :kind',
      ExpressionAttributeValues: { ':kind': 'CERT' },
    },
    cursor,
    limit,
  );
  return { certificates: items.map(strip), next };
}
