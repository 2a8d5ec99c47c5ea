import { nowMs } from '../clock.js';
import { config } from '../context.js';
import { FLEET_CA_VALIDITY_DAYS } from '../domain/pki.js';
import {
  agentCertificateToken,
  type CertificateSpec,
  FLEET_CAS,
  routerCertificateSpecs,
  routerSiteServerCertificate,
} from '../domain/router-site.js';
import { ReconcileError } from '../errors.js';
import type { AgentRow } from '../store/agents.js';
import {
  type CertificateRow,
  deleteCertificate,
  getCertificate,
  putNewCertificate,
  replaceCertificate,
  selfSignedCertificateAuthorityRow,
  signedLeafRow,
  signerOf,
  trustOf,
} from '../store/certificates.js';
import type { ChangeStamp } from '../store/changes.js';
import type { PlatformStatusRow } from '../store/platform.js';
import type { DefaultRouterRow } from '../store/routers.js';

/**
 * The platform step of a fog reconcile: the fleet's certificate authorities (self-signed by fogbridge on
 * a remote control plane the first time an agent is reconciled; on Kubernetes only ever imported by
 * the operator) and the agent's own router certificates, issued or reissued when they are missing, were
 * issued for another host, or were signed by a CA that has since been replaced. An issue or reissue
 * owes the agent its `volumeMounts` and `microserviceList` flags so it fetches the new files (and the
 * `siteCertificate` stamp for its site certificate, which routers dialling it anew wait for): returned
 * in `flags`, for the caller to raise once everything it changes for the agent is written. A
 * certificate the agent gets for the first time is returned in `created`, for the caller to write.
 * Level-triggered and idempotent like the rest of the fog reconcile; `waitingFor` says what the agent's
 * status waits for.
 */
export async function reconcilePlatform(
  agent: AgentRow,
  defaultRouter: DefaultRouterRow | undefined,
): Promise<{ waitingFor: string | null; flags: ChangeStamp[]; created: CertificateRow[] }> {
  // The default router's agent is dialled by the host PUT /api/v3/router registered, too.
  const specs = routerCertificateSpecs(
    agent,
    defaultRouter?.agentUuid === agent.uuid && defaultRouter.host ? [defaultRouter.host] : [],
  );
  const cas = new Map<string, CertificateRow>();
  const waitingFor: string[] = [];
  for (const name of config().controlPlane === 'kubernetes'
    ? new Set(specs.map((spec) => spec.ca))
    : FLEET_CAS) {
    const ca = await fleetCertificateAuthority(name);
    if (ca) cas.set(name, ca);
    else waitingFor.push(name);
  }
  let changed = await removeStaleRouterCertificates(agent, specs);
  let siteCertificate = false;
  const created: CertificateRow[] = [];
  for (const spec of specs) {
    const ca = cas.get(spec.ca);
    if (ca && (await ensureCertificate(spec, ca, agent.uuid, created))) {
      changed = true;
      if (spec.name === routerSiteServerCertificate(agentCertificateToken(agent.name)))
        siteCertificate = true;
    }
  }
  return {
    waitingFor:
      waitingFor.length === 0
        ? null
        : `waiting for CA ${waitingFor.join(', ')}: the operator imports it with POST /api/v3/certificates/ca (type k8s-secret)`,
    flags: [
      ...(changed ? (['volumeMounts', 'microserviceList'] as const) : []),
      ...(siteCertificate ? (['siteCertificate'] as const) : []),
    ],
    created,
  };
}

/** A fleet CA: as stored, or (remote only) created self-signed; undefined while Kubernetes waits for it. */
export async function fleetCertificateAuthority(name: string): Promise<CertificateRow | undefined> {
  const existing = await getCertificate(name);
  if (existing || config().controlPlane === 'kubernetes') return existing;
  const row = await selfSignedCertificateAuthorityRow(name, name, FLEET_CA_VALIDITY_DAYS);
  // Two agents reconciled at once both try; the first write wins and the other reads it.
  if (await putNewCertificate(row)) return row;
  return getCertificate(name);
}

const sameHosts = (a: readonly string[], b: readonly string[]) =>
  [...new Set(a)].sort().join('\n') === [...new Set(b)].sort().join('\n');

/**
 * Issues `spec` unless the stored certificate already matches it; true when it wrote one. A certificate
 * matches when it belongs to the agent, names the spec's hosts and was signed by what signs under its CA
 * now (`signerOf`: a CA replaced or being rotated makes it stale); one that matches but carries another
 * trust file (a rotation adding or dropping a CA) gets the new trust file and keeps its key. With
 * `created`, a certificate that does not exist yet is not written but handed back there, for the caller
 * to write with other items in one batch write (unconditionally: an agent's certificates are written
 * only by its own fog reconcile, which its message group runs one at a time, and a repeated run issues
 * an equivalent certificate for the same spec). A rewrite is always written here, conditioned on the
 * version it replaces.
 */
export async function ensureCertificate(
  spec: CertificateSpec,
  ca: CertificateRow,
  agentUuid: string,
  created?: CertificateRow[],
): Promise<boolean> {
  const existing = await getCertificate(spec.name);
  let row: CertificateRow;
  if (
    existing &&
    existing.agentUuid === agentUuid &&
    existing.signedBy === ca.name &&
    existing.signerFingerprint === signerOf(ca).fingerprint &&
    sameHosts(existing.hosts, spec.hosts)
  ) {
    if (existing.caPem === trustOf(ca)) return false;
    row = {
      ...existing,
      caPem: trustOf(ca),
      version: existing.version + 1,
      updatedAt: new Date(nowMs()).toISOString(),
    };
  } else {
    row = await signedLeafRow(
      {
        name: spec.name,
        commonName: spec.commonName,
        hosts: spec.hosts,
        ...(spec.validityDays ? { validityDays: spec.validityDays } : {}),
      },
      ca,
      { agentUuid, source: 'issued' },
      existing,
    );
  }
  if (!existing && created) {
    created.push(row);
    return true;
  }
  const written = existing ? await replaceCertificate(row, existing.version) : await putNewCertificate(row);
  if (!written) throw new ReconcileError(`Certificate ${spec.name} changed during reconcile; retrying`);
  return true;
}

/** An agent whose router was turned off keeps no router certificates. */
async function removeStaleRouterCertificates(agent: AgentRow, specs: CertificateSpec[]): Promise<boolean> {
  if (specs.length > 0) return false;
  let removed = false;
  for (const spec of routerCertificateSpecs({ ...agent, routerMode: 'edge' })) {
    const existing = await getCertificate(spec.name);
    if (existing?.agentUuid === agent.uuid) {
      await deleteCertificate(spec.name);
      removed = true;
    }
  }
  return removed;
}

/**
 * The agent's platform status for what it waits for (ready when nothing), or undefined when `current`
 * already says so: nothing to write.
 */
export function platformStatusChange(
  current: PlatformStatusRow | undefined,
  waitingFor: string | null,
): PlatformStatusRow | undefined {
  const phase = waitingFor ? 'pending' : 'ready';
  if (current?.phase === phase && current.message === waitingFor) return undefined;
  return { phase, message: waitingFor, updatedAt: new Date().toISOString() };
}
