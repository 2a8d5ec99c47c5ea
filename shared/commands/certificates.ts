import { config } from '../context.js';
import { type CreateCertificateAuthorityBody, expirationDays } from '../domain/certificate-schema.js';
import { certificateAuthorityProblem, certificateFacts } from '../domain/pki.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { readSecret } from '../k8s/secrets.js';
import { askRouterReconciles } from '../queue/publishers.js';
import { sealSecret } from '../secrets.js';
import { listAgentRows } from '../store/agents.js';
import {
  type CertificateRow,
  deleteCertificate,
  getCertificate,
  listCertificateAuthorities,
  listIssuedCertificates,
  putNewCertificate,
  selfSignedCertificateAuthorityRow,
} from '../store/certificates.js';

/** What POST /api/v3/certificates/ca answers (the reference's shape). */
export interface CreatedCertificateAuthority {
  name: string;
  subject: string;
  type: CreateCertificateAuthorityBody['type'];
  valid_from: string;
  valid_to: string;
}

/**
 * Creates a CA: self-signed, or imported from a Kubernetes Secret of the controller namespace (the
 * operator's import of the fleet CAs). The name is the stored name (the reference stored an import
 * under `secretName`, whatever `name` said). Every agent is reconciled afterwards: one waiting for this
 * CA gets its certificates, and one whose certificates another CA signed gets them reissued.
 */
export async function createCertificateAuthority(
  body: CreateCertificateAuthorityBody,
): Promise<CreatedCertificateAuthority> {
  if (await getCertificate(body.name)) throw new ConflictError(`CA with name ${body.name} already exists`);
  const row = body.type === 'self-signed' ? await selfSigned(body) : await imported(body);
  if (!(await putNewCertificate(row))) throw new ConflictError(`CA with name ${body.name} already exists`);
  await askRouterReconciles((await listAgentRows()).map((agent) => agent.uuid));
  return {
    name: row.name,
    subject: row.subject,
    type: body.type,
    valid_from: row.validFrom,
    valid_to: row.validTo,
  };
}

function selfSigned(body: CreateCertificateAuthorityBody): Promise<CertificateRow> {
  return selfSignedCertificateAuthorityRow(body.name, body.subject!, expirationDays(body.expiration!));
}

async function imported(body: CreateCertificateAuthorityBody): Promise<CertificateRow> {
  if (body.type === 'direct') {
    throw new ValidationError(
      "Field 'type': direct needs a secret store, which fogbridge does not offer; on Kubernetes use k8s-secret",
    );
  }
  if (config().controlPlane !== 'kubernetes') {
    throw new ValidationError(
      "Field 'type': k8s-secret needs a Kubernetes control plane (CONTROL_PLANE=kubernetes); use self-signed",
    );
  }
  const secretName = body.secretName!;
  const data = await readSecret(secretName);
  for (const key of ['tls.crt', 'tls.key'] as const) {
    if (!data[key])
      throw new ValidationError(`Secret ${secretName} has no ${key}; a CA Secret needs tls.crt and tls.key`);
  }
  const problem = certificateAuthorityProblem(data['tls.crt']!, data['tls.key']!);
  if (problem) throw new ValidationError(`Secret ${secretName}: its tls.crt ${problem}`);
  const facts = certificateFacts(data['tls.crt']!);
  const now = new Date().toISOString();
  return {
    name: body.name,
    isCA: true,
    subject: facts.subject,
    hosts: [],
    signedBy: body.name,
    signerFingerprint: facts.fingerprint,
    validFrom: facts.validFrom,
    validTo: facts.validTo,
    serialNumber: facts.serialNumber,
    fingerprint: facts.fingerprint,
    certPem: data['tls.crt']!,
    // A CA Secret's ca.crt is its own certificate; an intermediate's carries the chain.
    caPem: data['ca.crt'] || data['tls.crt']!,
    keySealed: await sealSecret(data['tls.key']!, body.name),
    source: 'k8s-secret',
    agentUuid: null,
    version: 1,
    createdAt: now,
    updatedAt: now,
  };
}

export interface CertificateAuthorityView {
  name: string;
  subject: string;
  isCA: true;
  validFrom: string;
  validTo: string;
  serialNumber: string;
  /** The certificate only: fogbridge never hands out a CA's private key. */
  data: { certificate: string };
}

async function requireCertificateAuthority(name: string): Promise<CertificateRow> {
  const row = await getCertificate(name);
  if (!row?.isCA) throw new NotFoundError(`CA with name ${name} not found`);
  return row;
}

export async function getCertificateAuthority(name: string): Promise<CertificateAuthorityView> {
  const row = await requireCertificateAuthority(name);
  return {
    name: row.name,
    subject: row.subject,
    isCA: true,
    validFrom: row.validFrom,
    validTo: row.validTo,
    serialNumber: row.serialNumber,
    data: { certificate: row.certPem },
  };
}

const DAY_MS = 86_400_000;

export async function listCertificateAuthorityViews() {
  const now = Date.now();
  return (await listCertificateAuthorities()).map((row) => ({
    name: row.name,
    subject: row.subject,
    valid_from: row.validFrom,
    valid_to: row.validTo,
    days_remaining: Math.max(0, Math.floor((Date.parse(row.validTo) - now) / DAY_MS)),
    is_expired: Date.parse(row.validTo) <= now,
  }));
}

/** Deletes a CA that has signed nothing still stored; 409 names what it signed. */
export async function deleteCertificateAuthority(name: string): Promise<void> {
  await requireCertificateAuthority(name);
  const signed = (await listIssuedCertificates())
    .filter((row) => row.signedBy === name)
    .map((row) => row.name);
  if (signed.length > 0) {
    throw new ConflictError(
      `CA ${name} has signed certificates ${signed.join(', ')}; delete their agents first`,
    );
  }
  await deleteCertificate(name);
}

const certificateView = (row: CertificateRow) => ({
  name: row.name,
  subject: row.subject,
  signedBy: row.signedBy,
  hosts: row.hosts,
  agentUuid: row.agentUuid,
  serialNumber: row.serialNumber,
  valid_from: row.validFrom,
  valid_to: row.validTo,
  version: row.version,
  data: { certificate: row.certPem },
});

export async function listCertificateViews() {
  return (await listIssuedCertificates()).map(certificateView);
}

export async function getCertificateView(name: string) {
  const row = await getCertificate(name);
  if (!row || row.isCA) throw new NotFoundError(`Certificate with name ${name} not found`);
  return certificateView(row);
}
