import { requeueServices } from '../commands/services.js';
import { config } from '../context.js';
import { hubRouterKey, parsePortOwner, portOwner } from '../domain/placement.js';
import { NotFoundError, ReconcileError } from '../errors.js';
import { logger } from '../log/logger.js';
import {
  askNatsApplicationReconciles,
  askNatsHubReconcile,
  askRouterReconciles,
  enqueueServiceReconcile,
} from '../queue/publishers.js';
import { getAgentRows, listAgentRows, listAgentUuidPage, listPendingAgentUuids } from '../store/agents.js';
import {
  type CertificateRow,
  deleteCertificatesOf,
  listCertificateAuthorities,
  listIssuedCertificatePage,
} from '../store/certificates.js';
import { keys } from '../store/client.js';
import { listAccountPage, listAccountRows } from '../store/nats-accounts.js';
import {
  leakedPorts,
  listPortClaimPage,
  type PortClaim,
  releaseBridgePort,
  returnToAllocator,
} from '../store/ports.js';
import { withReadSnapshot } from '../store/read-snapshot.js';
import { getRouterRequests } from '../store/router-requests.js';
import { type DefaultRouterRow, getDefaultRouter } from '../store/routers.js';
import {
  getServiceRow,
  listPendingServiceNames,
  listServiceRowPage,
  type ServiceRow,
} from '../store/services.js';
import { getDriftCursor, putDriftCursor } from '../store/sweep-cursors.js';
import { advanceCaRotations, renewDueCertificates, rotateDueFleetAuthorities } from './certificates.js';
import { hubDriftedInWindows, routerDrifted } from './drift.js';
import { redriveExpiredHolds } from './link-rollout.js';
import { servicesWithDriftedSets } from './service-sets.js';

export interface SweepResult {
  services: number;
  routers: number;
  /** Routers whose config the drift check found differing from the store (re-driven). */
  drifted: number;
  /** Services whose distribution-set listener the drift check found missing or wrong (re-driven). */
  driftedServices: number;
  releasedPorts: number;
}

/**
 * Re-drives whatever lags, level-triggered: services and agents whose generation is ahead of what
 * reconcile observed (older than the grace period, or all of them on a full sweep), routers whose config
 * differs from what the store says they should hold (a window of them per sweep, rotating over every
 * agent, plus the hub every time), and bridge-port claims whose owner is gone. A full sweep (local
 * start-up, where queued messages did not survive) re-converges every router instead.
 */
export async function sweep(options: { full: boolean; now?: number }): Promise<SweepResult> {
  const now = options.now ?? Date.now();
  const services = await redrivePendingServices(options.full ? 0 : config().pendingGraceMs, now);
  const defaultRouter = await getDefaultRouter();
  const routers = new Set(await listPendingAgentUuids());
  let drifted: string[] = [];
  let driftedServices = 0;
  if (options.full) {
    const agents = await listAgentRows();
    for (const agent of agents) routers.add(agent.uuid);
    const hub = hubRouterKey(defaultRouter);
    if (hub) routers.add(hub);
  } else {
    // One window of services serves both checks that start from services: their sets and the hub.
    const services = await nextServiceWindow();
    drifted = await findDriftedRouters(defaultRouter, services);
    driftedServices = await redriveDriftedServiceSets(services, now);
    // Reported before they are re-driven: a queued request is how a router that is catching up looks.
    await reportDrift(drifted);
    for (const key of drifted) routers.add(key);
  }
  // In full: a drifted router's entries are what is wrong, and a re-drive follows a computation that may
  // have stopped half-way.
  if (routers.size > 0) await askRouterReconciles(routers, { full: true });
  // The operator may rewrite its NATS ConfigMaps at any time: their write-backs are re-checked each sweep.
  if (config().controlPlane === 'kubernetes') await askNatsHubReconcile();
  const releasedPorts = await releaseOrphanPorts(now);
  await sweepCertificates();
  await redriveExpiredHolds();
  await redriveApplicationAccounts(options.full);
  const result = { services, routers: routers.size, drifted: drifted.length, driftedServices, releasedPorts };
  if (services + routers.size + releasedPorts > 0) logger.info('sweep re-drove work', { ...result });
  return result;
}

/** Application accounts re-converged per sweep. */
const ACCOUNT_WINDOW = 100;

/**
 * Application accounts are re-converged a window per sweep, rotating over all of them (every one on a
 * full sweep): what a reconcile that stopped half-way left (a microservice deleted before its user was
 * revoked, a user issued under a key a rotation replaced) is repaired within ⌈accounts / 100⌉ sweeps.
 */
async function redriveApplicationAccounts(full: boolean): Promise<void> {
  if (full) {
    await askNatsApplicationReconciles((await listAccountRows()).map((account) => account.application));
    return;
  }
  const page = await listAccountPage(await getDriftCursor('accounts'), ACCOUNT_WINDOW);
  await putDriftCursor(page.next, 'accounts');
  if (page.applications.length > 0) await askNatsApplicationReconciles(page.applications);
}

/** Certificates checked per sweep (one page of the certificate list). */
const CERTIFICATE_WINDOW = 1000;

/**
 * The certificates, a rotating window of them per sweep: those whose agent is gone are removed, those
 * about to expire are renewed; then the fleet CAs fogbridge made are rotated before they expire, and
 * every CA rotation is moved on as far as its sites allow.
 */
async function sweepCertificates(): Promise<void> {
  const page = await listIssuedCertificatePage(await getDriftCursor('certificates'), CERTIFICATE_WINDOW);
  await putDriftCursor(page.next, 'certificates');
  const kept = await removeOrphanCertificates(page.certificates);
  const cas = await listCertificateAuthorities();
  await renewDueCertificates(kept, new Map(cas.map((ca) => [ca.name, ca])));
  const rotated = await rotateDueFleetAuthorities(cas);
  await advanceCaRotations(cas.filter((ca) => !rotated.includes(ca.name)));
}

/**
 * Issued certificates whose agent is gone (a reconcile that issued them ran while the agent was being
 * deleted and nothing removed them after): owners read in batches, and the orphans deleted (each only
 * while it still names that owner). Returns the certificates that stay.
 */
async function removeOrphanCertificates(certificates: readonly CertificateRow[]): Promise<CertificateRow[]> {
  const owners = [
    ...new Set(certificates.flatMap((certificate) => (certificate.agentUuid ? [certificate.agentUuid] : []))),
  ];
  const present = await getAgentRows(owners);
  const gone = owners.filter((uuid) => !present.has(uuid));
  for (const owner of gone) {
    const names = certificates.filter((c) => c.agentUuid === owner).map((c) => c.name);
    const deleted = await deleteCertificatesOf(owner, names);
    if (deleted > 0)
      logger.warn('removed certificates of an agent that is gone', { agentUuid: owner, deleted });
  }
  return certificates.filter((c) => !c.agentUuid || !gone.includes(c.agentUuid));
}

async function redrivePendingServices(graceMs: number, now: number): Promise<number> {
  const pending = (await listPendingServiceNames()).filter(
    (service) => now - Date.parse(service.updatedAt) >= graceMs,
  );
  for (const service of pending)
    await enqueueServiceReconcile({ name: service.name, generation: service.generation }, `sweep-${now}`);
  return pending.length;
}

/** Routers checked at once by the drift check. */
const DRIFT_CHECK_CONCURRENCY = 8;

/**
 * The drift check: the next `DRIFT_CHECK_ROUTERS` agents after where the previous sweep stopped are
 * recomputed from the store and compared with their configs (reads only), and the hub is checked in
 * windows (`hubDriftedInWindows`: its own part, the window's services' entries on it, and the next
 * 2 × `DRIFT_CHECK_ROUTERS` of the entries it holds). No message has to arrive for a router to be
 * repaired: every agent's turn comes within ⌈agents / window⌉ sweeps, and every hub entry's within
 * ⌈services / window⌉.
 */
async function findDriftedRouters(
  defaultRouter: DefaultRouterRow | undefined,
  services: readonly ServiceRow[],
): Promise<string[]> {
  const window = config().driftCheckRouters;
  if (window === 0) return [];
  const page = await listAgentUuidPage(await getDriftCursor(), window);
  await putDriftCursor(page.next);
  const hub = hubRouterKey(defaultRouter);
  const agents = page.uuids.filter((uuid) => uuid !== hub);
  const drifted: string[] = [];
  if (hub) {
    const checked = await driftedOrUnknown(async () => {
      const result = await hubDriftedInWindows(
        hub,
        defaultRouter,
        services,
        await getDriftCursor('hub'),
        2 * window,
      );
      await putDriftCursor(result.next, 'hub');
      return result.drifted;
    });
    if (checked) drifted.push(hub);
  }
  for (let i = 0; i < agents.length; i += DRIFT_CHECK_CONCURRENCY) {
    const batch = agents.slice(i, i + DRIFT_CHECK_CONCURRENCY);
    const checks = await Promise.all(
      batch.map((key) => driftedOrUnknown(() => routerDrifted(key, defaultRouter))),
    );
    drifted.push(...batch.filter((_, index) => checks[index]));
  }
  return drifted;
}

/** The next `DRIFT_CHECK_ROUTERS` services after where the previous sweep stopped (none with it 0). */
async function nextServiceWindow(): Promise<ServiceRow[]> {
  const window = config().driftCheckRouters;
  if (window === 0) return [];
  const page = await listServiceRowPage(await getDriftCursor('services'), window);
  await putDriftCursor(page.next, 'services');
  return page.rows;
}

/**
 * The distribution-set half of the drift check: the window's services are checked against their set
 * entries (the listener every selecting agent's config is composed with); a service whose entries are
 * missing or wrong is re-driven, and its reconcile rewrites them and tells the agents.
 */
async function redriveDriftedServiceSets(services: readonly ServiceRow[], now: number): Promise<number> {
  const drifted = await servicesWithDriftedSets(services);
  if (drifted.length === 0) return 0;
  logger.warn('distribution sets drifted from the store; re-driving their services', {
    services: drifted.map((row) => row.name),
  });
  await requeueServices(drifted, `drift-${now}`);
  return drifted.length;
}

/**
 * A router with a reconcile still queued is only catching up; one without has drifted (a lost message,
 * a hand edit), which an operator should hear about.
 */
async function reportDrift(drifted: string[]): Promise<void> {
  if (drifted.length === 0) return;
  const requests = await Promise.all(drifted.map((key) => getRouterRequests(key)));
  const idle = drifted.filter((_, i) => (requests[i]!.requested ?? 0) <= (requests[i]!.completed ?? 0));
  if (idle.length > 0)
    logger.warn('router configs drifted from the store; re-driving them', { routerKeys: idle });
  if (idle.length < drifted.length)
    logger.info('router configs still catching up', { routers: drifted.length - idle.length });
}

/** A router whose desired state cannot be computed now (its hub ConfigMap missing) is left to reconcile. */
async function driftedOrUnknown(check: () => Promise<boolean>): Promise<boolean> {
  try {
    return await check();
  } catch (error) {
    if (error instanceof ReconcileError || error instanceof NotFoundError) return false;
    throw error;
  }
}

/**
 * Claims each sweep checks against their owners: a window taken in port order where the previous sweep
 * stopped, so a sweep reads a bounded number of service rows however many services there are (every
 * claim's turn comes within ⌈claims / window⌉ sweeps); its owners are read in batches of 100.
 */
const PORT_CHECK_WINDOW = 1_000;

/** Claims whose owner is gone or holds another port, and ports a crashed create took but never claimed. */
async function releaseOrphanPorts(now: number): Promise<number> {
  let released = 0;
  const page = await listPortClaimPage(await getDriftCursor('ports'), PORT_CHECK_WINDOW);
  await putDriftCursor(page.next, 'ports');
  const settled = page.claims.filter((claim) => now - Date.parse(claim.claimedAt) >= config().pendingGraceMs);
  const ownerNames = [...new Set(settled.map((claim) => parsePortOwner(claim.owner).name))];
  // The window's owners in one batched read pick the suspects; each suspect's owner is read again just
  // before its claim goes (a create may have adopted the claim since the batch was read).
  const suspects = await withReadSnapshot(
    ownerNames.map((name) => keys.service(name)),
    async () => {
      const orphaned: PortClaim[] = [];
      for (const claim of settled) if (orphanedClaim(claim, await claimOwner(claim))) orphaned.push(claim);
      return orphaned;
    },
  );
  for (const claim of suspects) {
    if (!orphanedClaim(claim, await claimOwner(claim))) continue;
    await releaseBridgePort(claim.port, claim.owner, config().bridgePorts);
    released++;
  }
  for (const port of await leakedPorts(config().bridgePorts)) {
    await returnToAllocator(port, config().bridgePorts);
    released++;
  }
  return released;
}

const claimOwner = (claim: PortClaim) => getServiceRow(parsePortOwner(claim.owner).name);

/** A claim whose owner is gone, deleted, a later incarnation, or holding another port. */
function orphanedClaim(claim: PortClaim, owner: ServiceRow | undefined): boolean {
  return (
    !owner ||
    owner.deleted ||
    portOwner(owner) !== claim.owner ||
    (owner.bridgePort !== null && owner.bridgePort !== claim.port)
  );
}
