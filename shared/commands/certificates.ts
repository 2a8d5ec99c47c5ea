import { nowMs } from '../clock.js';
import { config } from '../context.js';
import {
  type CreateCertificateAuthorityBody,
  type CreateCertificateBody,
  expirationDays,
  splitHosts,
} from '../domain/certificate-schema.js';
import {
  certificateAuthorityProblem,
  certificateFacts,
  createCertificateAuthority as newCertificateAuthority,
} from '../domain/pki.js';
import { ConflictError, ContentionError, NotFoundError, ValidationError } from '../errors.js';
import { readSecret } from '../k8s/secrets.js';
import { askRouterReconciles } from '../queue/publishers.js';
import { CONFLICT, retryOnConflict } from '../retry.js';
import { sealSecret } from '../secrets.js';
import { getAgentRow, listAgentRows } from '../store/agents.js';
import {
  type CertificateRow,
  deleteCertificate,
  getCertificate,
  listAllCertificates,
  listCertificateAuthorities,
  listIssuedCertificates,
  putNewCertificate,
  replaceCertificate,
  selfSignedCertificateAuthorityRow,
  selfSignedLeafRow,
  signedLeafRow,
} from '../store/certificates.js';
import { raiseChangeFlags } from '../store/changes.js';

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
  const now = new Date(nowMs()).toISOString();
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
  /** A rotation in progress: its phase and since when. */
  rotation?: { phase: 'trust' | 'reissue'; startedAt: string; phaseSince: string };
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
    ...(row.rotation
      ? {
          rotation: {
            phase: row.rotation.phase,
            startedAt: row.rotation.startedAt,
            phaseSince: row.rotation.phaseSince,
          },
        }
      : {}),
  };
}

const DAY_MS = 86_400_000;

const daysRemaining = (row: CertificateRow, now: number) =>
  Math.max(0, Math.floor((Date.parse(row.validTo) - now) / DAY_MS));
const isExpired = (row: CertificateRow, now: number) => Date.parse(row.validTo) <= now;

/**
 * GET /api/v3/certificates/ca: the reference's fields, and beside them the ones the SDK's CAInfo
 * decodes (`isCA`, `validFrom`, `validTo`, `serialNumber`).
 */
export async function listCertificateAuthorityViews() {
  const now = nowMs();
  return (await listCertificateAuthorities()).map((row) => ({
    name: row.name,
    subject: row.subject,
    isCA: true as const,
    validFrom: row.validFrom,
    validTo: row.validTo,
    serialNumber: row.serialNumber,
    valid_from: row.validFrom,
    valid_to: row.validTo,
    days_remaining: daysRemaining(row, now),
    is_expired: isExpired(row, now),
  }));
}

/** Who still uses a CA: the certificates it signed, each with the agent that holds it, if any. */
async function usersOfCertificateAuthority(name: string): Promise<string[]> {
  const signed = (await listIssuedCertificates()).filter((row) => row.signedBy === name);
  return Promise.all(signed.map(async (row) => `${row.name}${await heldBy(row)}`));
}

/** " (held by agent X's router)" for an agent's certificate, "" for a user's. */
async function heldBy(row: CertificateRow): Promise<string> {
  if (!row.agentUuid) return '';
  const agent = await getAgentRow(row.agentUuid);
  const process = row.name.startsWith('nats-') ? 'NATS server' : 'router';
  return ` (held by agent ${agent?.name ?? row.agentUuid}'s ${process})`;
}

/** Deletes a CA that has signed nothing still stored; 409 names every certificate it signed and who holds it. */
export async function deleteCertificateAuthority(name: string): Promise<void> {
  await requireCertificateAuthority(name);
  const users = await usersOfCertificateAuthority(name);
  if (users.length > 0) {
    throw new ConflictError(
      `CA ${name} still signs certificates in use: ${users.slice(0, 5).join(', ')}${users.length > 5 ? ` and ${users.length - 5} more` : ''}; delete them (or their agents) first`,
    );
  }
  await deleteCertificate(name);
}

/** The CA that signed a certificate, by name (null for a CA or a self-signed certificate). */
const caNameOf = (row: CertificateRow) => (row.signedBy === row.name ? null : row.signedBy);

/** A certificate as the SDK's CertificateInfo lists it (`hosts` one comma-separated string). */
function listedCertificate(row: CertificateRow, now: number) {
  return {
    name: row.name,
    subject: row.subject,
    hosts: row.hosts.join(','),
    isCA: row.isCA,
    validFrom: row.validFrom,
    validTo: row.validTo,
    serialNumber: row.serialNumber,
    daysRemaining: daysRemaining(row, now),
    isExpired: isExpired(row, now),
    caName: caNameOf(row),
  };
}

/** GET /api/v3/certificates: every CA and certificate, CAs first. */
export async function listCertificateViews() {
  const now = nowMs();
  return (await listAllCertificates()).map((row) => listedCertificate(row, now));
}

/**
 * GET /api/v3/certificates/{name}: a CA or a certificate, with its chain (the CAs above it) and its
 * certificate; never its key.
 */
export async function getCertificateView(name: string) {
  const row = await getCertificate(name);
  if (!row) throw new NotFoundError(`Certificate with name ${name} not found`);
  const caName = caNameOf(row);
  const ca = caName ? await getCertificate(caName) : undefined;
  return {
    ...listedCertificate(row, nowMs()),
    certificateChain: ca ? [{ name: ca.name, subject: ca.subject }] : [],
    data: { certificate: row.certPem },
  };
}

/**
 * GET /api/v3/certificates/expiring: what expires within `days` (or has expired), soonest first, with
 * the fields the SDK decodes and the reference's own names beside them.
 */
export async function listExpiringCertificateViews(days: number) {
  const now = nowMs();
  const horizon = now + days * DAY_MS;
  return (await listAllCertificates())
    .filter((row) => Date.parse(row.validTo) <= horizon)
    .sort((a, b) => Date.parse(a.validTo) - Date.parse(b.validTo))
    .map((row) => {
      const listed = listedCertificate(row, now);
      return {
        ...listed,
        is_ca: listed.isCA,
        valid_from: listed.validFrom,
        valid_to: listed.validTo,
        days_remaining: listed.daysRemaining,
        ca_name: listed.caName,
      };
    });
}

/** What POST /api/v3/certificates and a renewal answer (the SDK's names, the reference's beside them). */
function issuedReply(row: CertificateRow) {
  return {
    name: row.name,
    subject: row.subject,
    hosts: row.hosts.join(','),
    validFrom: row.validFrom,
    validTo: row.validTo,
    caName: caNameOf(row),
    valid_from: row.validFrom,
    valid_to: row.validTo,
    ca_name: caNameOf(row),
  };
}

/** A CA that may sign now: it exists, is a CA, and has not expired. */
async function signingAuthority(name: string, field: string): Promise<CertificateRow> {
  const ca = await getCertificate(name);
  if (!ca?.isCA) throw new NotFoundError(`CA with name ${name} not found`);
  if (isExpired(ca, nowMs())) {
    throw new ValidationError(
      `Field '${field}': CA ${name} expired on ${ca.validTo} and cannot sign; rotate it with POST /api/v3/certificates/ca/${name}/rotate`,
    );
  }
  return ca;
}

/**
 * POST /api/v3/certificates: a certificate for `hosts`, signed by a CA fogbridge holds or self-signed.
 * An `expiration` that would outlast its CA is refused (no leaf outlives its CA); without one it lasts
 * five years or until its CA expires, whichever is first.
 */
export async function createCertificate(body: CreateCertificateBody) {
  if (await getCertificate(body.name))
    throw new ConflictError(`Certificate with name ${body.name} already exists`);
  const hosts = splitHosts(body.hosts);
  const validityDays = body.expiration === undefined ? undefined : expirationDays(body.expiration);
  let row: CertificateRow;
  if (body.ca.type === 'self-signed') {
    row = await selfSignedLeafRow(
      {
        name: body.name,
        commonName: body.subject,
        hosts,
        ...(validityDays === undefined ? {} : { validityDays }),
      },
      { agentUuid: null, source: 'user' },
    );
  } else {
    const ca = await signingAuthority(body.ca.secretName!, 'ca.secretName');
    if (validityDays !== undefined && nowMs() + validityDays * DAY_MS > Date.parse(ca.validTo)) {
      throw new ValidationError(
        `Field 'expiration': ${body.expiration} lasts past its CA ${ca.name}, which expires on ${ca.validTo}`,
      );
    }
    row = await signedLeafRow(
      {
        name: body.name,
        commonName: body.subject,
        hosts,
        ...(validityDays === undefined ? {} : { validityDays }),
      },
      ca,
      { agentUuid: null, source: 'user' },
    );
  }
  if (!(await putNewCertificate(row)))
    throw new ConflictError(`Certificate with name ${body.name} already exists`);
  return issuedReply(row);
}

/** A path name that must be a certificate, not a CA (the leaf routes). */
async function requireLeaf(name: string, use: string): Promise<CertificateRow> {
  const row = await getCertificate(name);
  if (!row) throw new NotFoundError(`Certificate with name ${name} not found`);
  if (row.isCA) throw new ValidationError(`Field 'name': ${name} is a CA; ${use}`);
  return row;
}

/**
 * DELETE /api/v3/certificates/{name}: a certificate a user made. An agent's own certificate is refused
 * (409 naming the agent): its router or NATS server presents it, and it goes with the agent.
 */
export async function deleteCertificateByName(name: string): Promise<void> {
  const row = await requireLeaf(name, `delete it with DELETE /api/v3/certificates/ca/${name}`);
  if (row.agentUuid) {
    throw new ConflictError(
      `Certificate ${name} is in use${await heldBy(row)}; it is removed with its agent or when that agent's ${row.name.startsWith('nats-') ? 'NATS mode' : 'router mode'} becomes none`,
    );
  }
  await deleteCertificate(name);
}

/** The days a certificate was issued for: as asked, else its own span (an agent's: the fleet default). */
export function lifetimeDays(row: CertificateRow): number | undefined {
  if (row.validityDays !== undefined || row.source === 'issued') return row.validityDays;
  return (Date.parse(row.validTo) - Date.parse(row.validFrom)) / DAY_MS;
}

/**
 * Issues a certificate again with the same name, subject, names and CA (keeping it as its CA's, which
 * the reference loses) and a new key and serial, for as long as it was issued for (never past its CA);
 * an agent's is delivered as a volume-mount change (the Router reloads its TLS files, no rebuild).
 * Returns undefined when another writer replaced it first.
 */
export async function reissueCertificate(
  row: CertificateRow,
  ca: CertificateRow | undefined,
): Promise<CertificateRow | undefined> {
  const validityDays = lifetimeDays(row);
  const spec = {
    name: row.name,
    commonName: row.subject,
    hosts: row.hosts,
    ...(validityDays === undefined ? {} : { validityDays }),
  };
  const owner = { agentUuid: row.agentUuid, source: row.source };
  const next =
    ca === undefined ? await selfSignedLeafRow(spec, owner, row) : await signedLeafRow(spec, ca, owner, row);
  if (!(await replaceCertificate(next, row.version))) return undefined;
  if (row.agentUuid) await raiseChangeFlags(row.agentUuid, ['volumeMounts']);
  return next;
}

/** POST /api/v3/certificates/{name}/renew: a new serial and key, the same names and CA. */
export async function renewCertificate(name: string) {
  // A renewal that lost to another writer (another renewal, its agent's reconcile) renews what that wrote.
  const renewed = await retryOnConflict(
    async () => {
      const row = await requireLeaf(name, `rotate it with POST /api/v3/certificates/ca/${name}/rotate`);
      const ca = row.signedBy === row.name ? undefined : await signingAuthority(row.signedBy, 'name');
      return (await reissueCertificate(row, ca)) ?? CONFLICT;
    },
    {
      times: 5,
      exhausted: () =>
        new ContentionError(`Certificate ${name} kept changing while it was renewed; try again`),
    },
  );
  return { ...issuedReply(renewed), renewed: true };
}

/**
 * POST /api/v3/certificates/ca/{name}/rotate: a new key and certificate for a CA fogbridge made, with
 * the same subject and lifetime. The fleet moves to it in phases the sweeper advances (see CaRotation):
 * the new CA joins every trust file, then leaves are reissued under it, then the old CA leaves the trust
 * files, each phase only once every site acknowledged the one before.
 */
export async function rotateCertificateAuthority(name: string) {
  // A rotation that lost to another write of the CA reads it again (another rotation is then a 409).
  const next = await retryOnConflict(
    async () => {
      const ca = await requireCertificateAuthority(name);
      if (ca.source !== 'self-signed') {
        throw new ValidationError(
          `Field 'name': CA ${name} was imported (${ca.source}); fogbridge holds no way to make its successor, import the new CA under a new name instead`,
        );
      }
      if (ca.rotation) {
        throw new ConflictError(
          `CA ${name} is already being rotated (phase ${ca.rotation.phase}, since ${ca.rotation.phaseSince})`,
        );
      }
      const row = await successorOf(ca);
      return (await replaceCertificate(row, ca.version)) ? row : CONFLICT;
    },
    {
      times: 5,
      exhausted: () => new ContentionError(`CA ${name} kept changing while it was rotated; try again`),
    },
  );
  await askRouterReconciles((await listAgentRows()).map((agent) => agent.uuid));
  return {
    name,
    subject: next.subject,
    validFrom: next.validFrom,
    validTo: next.validTo,
    serialNumber: next.serialNumber,
    phase: 'trust' as const,
  };
}

/** A CA's successor as stored: a new key and certificate, the same subject and lifetime, in phase `trust`. */
async function successorOf(ca: CertificateRow): Promise<CertificateRow> {
  const pem = await newCertificateAuthority(ca.subject, {
    validityDays: lifetimeDays(ca) ?? (Date.parse(ca.validTo) - Date.parse(ca.validFrom)) / DAY_MS,
    now: new Date(nowMs()),
  });
  const facts = certificateFacts(pem.certPem);
  const now = new Date(nowMs()).toISOString();
  return {
    ...ca,
    validFrom: facts.validFrom,
    validTo: facts.validTo,
    serialNumber: facts.serialNumber,
    fingerprint: facts.fingerprint,
    signerFingerprint: facts.fingerprint,
    certPem: pem.certPem,
    caPem: pem.certPem,
    keySealed: await sealSecret(pem.keyPem, ca.name),
    version: ca.version + 1,
    updatedAt: now,
    rotation: {
      phase: 'trust',
      previousCertPem: ca.certPem,
      previousKeySealed: ca.keySealed,
      previousFingerprint: ca.fingerprint,
      startedAt: now,
      phaseSince: now,
    },
  };
}
