import { nowMs } from '../clock.js';
import { config } from '../context.js';
import type { RouterConfig } from '../domain/router-config.js';
import {
  agentCertificateToken,
  routerSiteServerCertificate,
  type SiteConnector,
} from '../domain/router-site.js';
import { isOnline } from '../domain/service-sites.js';
import { logger } from '../log/logger.js';
import { askRouterReconciles } from '../queue/publishers.js';
import { getAgentStatus } from '../store/agent-reports.js';
import { type AgentRow, getAgentRow } from '../store/agents.js';
import { getCertificate } from '../store/certificates.js';
import { changeStateOf } from '../store/changes.js';
import { getRequestRecords } from '../store/platform.js';
import {
  clearRolloutWait,
  deleteRolloutHold,
  type LinksTold,
  listRolloutHolds,
  putRolloutHold,
  putRolloutWait,
  type RolloutWait,
} from '../store/rollout-holds.js';
import { getRouterConfig } from '../store/routers.js';

/**
 * The rollout order of a change to both ends of a link (a hub moved, its ports changed, its
 * certificate reissued): the listening side first. A dialling router is told to rebuild (and so dial
 * with what its new config says) only once every agent it dials holds what that dial needs: a site
 * certificate naming the host dialled, a listener on the port dialled, and its new certificate and
 * listeners acknowledged (so every hold ends with an acknowledgement of the upstream, or the bound). Until then the dialer keeps running what it started
 * with, and its rebuild is held; the upstream's next acknowledgement re-drives it (agent-protocol.ts).
 * A hold lasts at most `LINK_ROLLOUT_WAIT_SECONDS`: after that the dialer is told anyway (one silent
 * agent cannot hold the fleet), and its router requests item says what it waited for and when it was
 * told (`rollout`, shown on its site in the topology).
 */

interface Awaited {
  upstream: AgentRow;
  reason: string;
}

/** Whether the dialer may be told to rebuild for `planned` now: `tell`, or `hold` (re-driven later). */
export async function rolloutGate(
  dialer: AgentRow,
  planned: RouterConfig,
  current: RolloutWait | undefined,
  told: LinksTold | undefined,
): Promise<'tell' | 'hold'> {
  const awaited = await awaitedUpstream(planned, told);
  const now = nowMs();
  const holding = current && !current.toldAt ? current : undefined;
  if (!awaited) {
    if (holding) {
      await clearRolloutWait(dialer.uuid);
      await deleteRolloutHold(holding.upstream, dialer.uuid);
    }
    return 'tell';
  }
  if (holding && holding.upstream !== awaited.upstream.uuid)
    await deleteRolloutHold(holding.upstream, dialer.uuid);
  const since =
    holding && holding.upstream === awaited.upstream.uuid ? holding.since : new Date(now).toISOString();
  const wait: RolloutWait = {
    upstream: awaited.upstream.uuid,
    upstreamName: awaited.upstream.name,
    reason: awaited.reason,
    since,
  };
  if (now - Date.parse(since) >= config().linkRolloutWaitMs) {
    await putRolloutWait(dialer.uuid, { ...wait, toldAt: new Date(now).toISOString() });
    await deleteRolloutHold(awaited.upstream.uuid, dialer.uuid);
    logger.warn('told a dialling router to rebuild before the agent it dials was ready', {
      dialer: dialer.uuid,
      upstream: awaited.upstream.uuid,
      reason: awaited.reason,
    });
    return 'tell';
  }
  await putRolloutWait(dialer.uuid, wait);
  await putRolloutHold(awaited.upstream.uuid, dialer.uuid, since);
  // The upstream may have acknowledged between the check and the hold (its acknowledgement found no
  // hold to re-drive): checked again now that the hold is written, so no wake-up is lost.
  if (!(await awaitedUpstream(planned, told))) {
    await clearRolloutWait(dialer.uuid);
    await deleteRolloutHold(awaited.upstream.uuid, dialer.uuid);
    return 'tell';
  }
  return 'hold';
}

/** The links of a router's config, as `LinksTold` records them. */
export function linksOf(config: RouterConfig): LinksTold {
  return Object.fromEntries(
    Object.entries(config.connectors ?? {}).map(([key, connector]) => [
      key,
      { host: connector.host, port: String(connector.port), role: connector.role },
    ]),
  );
}

/**
 * The first agent `planned`'s connectors dial anew (a link its router was not told to start with) that
 * is not ready for the dial, and why. A link the router already runs waits for nothing.
 */
async function awaitedUpstream(
  planned: RouterConfig,
  told: LinksTold | undefined,
): Promise<Awaited | undefined> {
  const links = linksOf(planned);
  for (const [key, connector] of Object.entries(planned.connectors ?? {})) {
    const running = told?.[key];
    const link = links[key]!;
    if (running && running.host === link.host && running.port === link.port && running.role === link.role)
      continue;
    const upstream = await getAgentRow(key);
    if (!upstream) continue;
    const reason = await notReadyFor(upstream, connector);
    if (reason) return { upstream, reason };
  }
  return undefined;
}

async function notReadyFor(upstream: AgentRow, connector: SiteConnector): Promise<string | undefined> {
  const [certificate, stored, records, status] = await Promise.all([
    getCertificate(routerSiteServerCertificate(agentCertificateToken(upstream.name))),
    getRouterConfig(upstream.uuid),
    getRequestRecords([upstream.uuid]),
    getAgentStatus(upstream.uuid),
  ]);
  const record = records.get(upstream.uuid);
  const changes = changeStateOf(record);
  const listening = Object.values(stored?.config.listeners ?? {}).some(
    (listener) => listener.role === connector.role && listener.port === Number(connector.port),
  );
  // While a computation of the upstream runs, what it writes is not told yet: a certificate it reissued
  // is stored before the change stamp saying so is raised (with the completion), so neither the
  // certificate nor the stamp can be trusted until it completes.
  const computing = Number(record?.fabricRequested ?? 0) > Number(record?.fabricCompleted ?? 0);
  const reason = computing
    ? 'its reconcile has not finished yet'
    : !certificate?.hosts.includes(connector.host)
      ? `its site certificate does not name ${connector.host} yet`
      : !listening
        ? `it has no ${connector.role} listener on port ${connector.port} yet`
        : changes.siteCertificate
          ? 'it has not fetched its new certificate yet'
          : changes.rebuildRouter
            ? 'its router has not restarted with its new listeners yet'
            : undefined;
  if (!reason) return undefined;
  const silent = !isOnline(status?.lastActive, nowMs(), config().agentOfflineAfterMs);
  return silent
    ? `${reason}, and it is silent${status?.lastActive ? ` since ${new Date(status.lastActive).toISOString()}` : ' (never heard from)'}`
    : reason;
}

/** The sweeper's part: every hold past the bounded wait is re-driven (its dialer is then told). */
export async function redriveExpiredHolds(): Promise<number> {
  const now = nowMs();
  const expired = (await listRolloutHolds()).filter(
    (hold) => now - Date.parse(hold.since) >= config().linkRolloutWaitMs,
  );
  if (expired.length > 0) await askRouterReconciles(expired.map((hold) => hold.dialer));
  return expired.length;
}
