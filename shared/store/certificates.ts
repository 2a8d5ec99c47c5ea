import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { certificateFacts, createCertificateAuthority } from '../domain/pki.js';
import { sealSecret } from '../secrets.js';
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
  source: 'self-signed' | 'k8s-secret' | 'issued';
  /** The agent it belongs to (issued certificates). */
  agentUuid: string | null;
  version: number;
  createdAt: string;
  updatedAt: string;
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
  const pem = await createCertificateAuthority(subject, { validityDays });
  const facts = certificateFacts(pem.certPem);
  const now = new Date().toISOString();
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
