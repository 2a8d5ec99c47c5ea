import { nowMs } from '../clock.js';
import { lifetimeDays, reissueCertificate, rotateCertificateAuthority } from '../commands/certificates.js';
import { config } from '../context.js';
import { caRotationDue, leafRenewal } from '../domain/certificate-renewal.js';
import { ROUTER_LEAF_VALIDITY_DAYS } from '../domain/pki.js';
import { FLEET_CAS } from '../domain/router-site.js';
import { ConflictError } from '../errors.js';
import { logger } from '../log/logger.js';
import { askRouterReconciles } from '../queue/publishers.js';
import {
  type CertificateRow,
  listIssuedCertificates,
  replaceCertificate,
  trustOf,
} from '../store/certificates.js';
import { changeStateOf } from '../store/changes.js';
import { getRequestRecords } from '../store/platform.js';

/**
 * The sweeper's certificate steps: renewing what is about to expire, rotating the fleet CAs fogbridge
 * made before they do, and moving each CA rotation on once every site has what its phase gave it.
 */

/**
 * Renews the certificates of `rows` (the sweep's window) that are due: within the renewal window of
 * their notAfter and gaining by it (see `leafRenewal`). Returns how many it renewed.
 */
export async function renewDueCertificates(
  rows: readonly CertificateRow[],
  cas: ReadonlyMap<string, CertificateRow>,
): Promise<number> {
  const now = nowMs();
  const windowDays = config().certificateRenewBeforeDays;
  let renewed = 0;
  for (const row of rows) {
    if (row.isCA) continue;
    const ca = row.signedBy === row.name ? undefined : cas.get(row.signedBy);
    if (row.signedBy !== row.name && !ca) continue;
    const decision = leafRenewal({
      leaf: row,
      ca: ca ? { validTo: ca.validTo, rotating: ca.rotation !== undefined } : undefined,
      // An agent's leaf issued without a lifetime of its own lasts the fleet's default.
      lifetimeDays: lifetimeDays(row) ?? ROUTER_LEAF_VALIDITY_DAYS,
      windowDays,
      now,
    });
    if (!decision.renew) {
      if (decision.reason === 'ca-expired')
        logger.warn('certificate is due but its CA has expired', { certificate: row.name, ca: row.signedBy });
      continue;
    }
    if (await reissueCertificate(row, ca)) renewed += 1;
  }
  if (renewed > 0) logger.info('renewed certificates before they expire', { renewed });
  return renewed;
}

/** Starts the rotation of every fleet CA fogbridge made that is due (see `caRotationDue`). */
export async function rotateDueFleetAuthorities(cas: readonly CertificateRow[]): Promise<string[]> {
  const now = nowMs();
  const windowDays = config().certificateRenewBeforeDays;
  const due = cas.filter(
    (ca) =>
      ca.source === 'self-signed' &&
      (FLEET_CAS as readonly string[]).includes(ca.name) &&
      caRotationDue({ ca: { validTo: ca.validTo, rotating: ca.rotation !== undefined }, windowDays, now }),
  );
  for (const ca of due) {
    try {
      await rotateCertificateAuthority(ca.name);
      logger.info('started the rotation of a fleet CA before it expires', {
        ca: ca.name,
        validTo: ca.validTo,
      });
    } catch (error) {
      // Another sweep started it first.
      if (!(error instanceof ConflictError)) throw error;
    }
  }
  return due.map((ca) => ca.name);
}

/**
 * Moves each CA rotation on by one phase when every site is ready for it:
 * - `trust` → `reissue` once every leaf under the CA carries the new trust file and its agent
 *   acknowledged it (no peer can then refuse a leaf the new CA signs);
 * - `reissue` → done once every leaf is signed by the new CA and its agent acknowledged it (no peer
 *   presents the old CA's leaf any more), and the old CA leaves the trust files.
 * Leaves that lag are re-driven (their agents' reconciles write them); users' certificates, which no
 * agent holds, are reissued here.
 */
export async function advanceCaRotations(cas: readonly CertificateRow[]): Promise<void> {
  const rotating = cas.filter((ca) => ca.rotation);
  if (rotating.length === 0) return;
  const issued = await listIssuedCertificates();
  for (const ca of rotating) {
    const leaves = issued.filter((row) => row.signedBy === ca.name && row.name !== ca.name);
    if (ca.rotation!.phase === 'reissue') {
      for (const row of leaves.filter((leaf) => !leaf.agentUuid && leaf.signerFingerprint !== ca.fingerprint))
        await reissueCertificate(row, ca);
    }
    const agentLeaves = leaves.filter((row) => row.agentUuid);
    const lagging = agentLeaves.filter((row) =>
      ca.rotation!.phase === 'trust' ? row.caPem !== trustOf(ca) : row.signerFingerprint !== ca.fingerprint,
    );
    const agents = [...new Set(agentLeaves.map((row) => row.agentUuid!))];
    if (lagging.length > 0) {
      await askRouterReconciles(new Set(lagging.map((row) => row.agentUuid!)));
      continue;
    }
    if (!(await sitesAcknowledged(agents))) continue;
    const now = new Date(nowMs()).toISOString();
    const { rotation: _done, ...finished } = ca;
    const next: CertificateRow =
      ca.rotation!.phase === 'trust'
        ? { ...ca, rotation: { ...ca.rotation!, phase: 'reissue', phaseSince: now }, version: ca.version + 1 }
        : { ...finished, version: ca.version + 1, updatedAt: now };
    if (!(await replaceCertificate(next, ca.version))) continue;
    logger.info('CA rotation moved on', { ca: ca.name, phase: next.rotation?.phase ?? 'done' });
    await askRouterReconciles(agents);
  }
}

/**
 * Whether every agent has what its reconciles wrote: every requested computation of it finished, and
 * the volume mounts it was told of acknowledged.
 */
async function sitesAcknowledged(agentUuids: readonly string[]): Promise<boolean> {
  const records = await getRequestRecords(agentUuids);
  return agentUuids.every((uuid) => {
    const record = records.get(uuid);
    if (!record) return false;
    const requested = Number(record.requested ?? 0);
    const completed = Number(record.completed ?? 0);
    return completed >= requested && !changeStateOf(record).flags.volumeMounts;
  });
}
