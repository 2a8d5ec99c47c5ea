import { config } from '../context.js';
import { agentIndexTokens } from '../domain/distribution.js';
import { DEFAULT_ROUTER } from '../domain/placement.js';
import { countEvent, observeStep } from '../metrics/operations.js';
import type { FogRequest } from '../queue/messages.js';
import { type AgentRow, agentTokenWrites, getAgentRow, replaceAgentRow } from '../store/agents.js';
import { forgetApplied, getApplied } from '../store/applied.js';
import { certificateItem, deleteCertificatesOf } from '../store/certificates.js';
import { type ChangeStamp, raiseChangeFlags } from '../store/changes.js';
import { batchWriteItems } from '../store/client.js';
import { changeCounterNow, forgetPendingSites, markSitePending } from '../store/pending-sites.js';
import { type PlatformStatusRow, putPlatformStatus } from '../store/platform.js';
import { withReadSnapshot } from '../store/read-snapshot.js';
import { type LinksTold, putLinksTold } from '../store/rollout-holds.js';
import { markRouterRequestsCompleted } from '../store/router-requests.js';
import { type DefaultRouterRow, deleteRouterConfig, getRouterConfig } from '../store/routers.js';
import { outsideReadSnapshot } from '../store/snapshot.js';
import { recordTokenIntent } from '../store/token-index.js';
import { type FogInputs, fabricReadKeys, readFogInputs } from './fog-inputs.js';
import { linksOf, rolloutGate } from './link-rollout.js';
import { reconcileNats } from './nats.js';
import { platformStatusChange, reconcilePlatform } from './platform.js';
import { flagsOwedFor, markTold, rebuildTold, reconcileRouter } from './router-write.js';

/**
 * A whole router (fog request `router`: an agent change, a CA import, a re-drive, or the standalone
 * default router), skipped when a later computation covered it:
 *
 * 1. the agent's own items: its token index entries and its router certificates (`agentItems`);
 * 2. its router config: its own part, and its entries in full when asked (a re-drive) or when what
 *    placement reads of it moved (`routerConfig`);
 * 3. its NATS process (`agentNats`), after the router so a NATS problem never holds the router back;
 * 4. the agent told of everything at once, by the write that marks the requests covered and records
 *    its platform status (`tellAgent`), then its observed generation.
 *
 * An agent's own part reads some twenty items (certificates and their CAs, NATS identities and mounts,
 * statuses): one batch read up front answers them all.
 */
export async function applyRouter(request: Extract<FogRequest, { kind: 'router' }>): Promise<void> {
  const inputs = await readFogInputs(request.routerKey, undefined);
  const { requests, agent } = inputs;
  if (requests.completed !== undefined && request.seq <= requests.completed) return;
  countEvent('router reconcile');
  const fabric = request.routerKey !== DEFAULT_ROUTER;
  const computation: Computation = {
    fabric,
    // Entries in full unless this is an agent change nobody asked a full computation of.
    full: !fabric || (requests.fullRequested ?? 0) > (requests.fullCompleted ?? 0),
    coveredUpTo: Math.max(requests.requested ?? 0, request.seq),
  };
  const compute = () => computeRouter(request.routerKey, inputs, computation);
  const outcome = await (agent && fabric ? withReadSnapshot(fabricReadKeys(agent), compute) : compute());
  if (outcome === AGENT_GONE) return;
  await tellAgent(request.routerKey, outcome, {
    computation,
    ...(outcome.waits === undefined ? {} : { status: platformStatusChange(inputs.platform, outcome.waits) }),
  });
  if (agent && agent.observedGeneration < agent.generation) {
    await replaceAgentRow({ ...agent, observedGeneration: agent.generation }, agent);
  }
}

/** What a router's computation covers: the agent's own part too (`fabric`), its entries in full. */
interface Computation {
  fabric: boolean;
  full: boolean;
  /** The requests it covers: every one up to this number. */
  coveredUpTo: number;
}

/** What the agent is owed for what a computation wrote, and what its platform waits for. */
interface Owed {
  /** What the agent's platform waits for (null: nothing; undefined: no agent part ran). */
  waits: string | null | undefined;
  /** The change flags it is owed (its config, new certificates, a rebuild). */
  raise: ChangeStamp[];
  /** The router start the raise tells it to rebuild for. */
  restart?: { digest: string };
  /** The links its router runs once told (recorded with the raise). */
  links?: LinksTold;
  /** A rebuild it owes is held (see link-rollout.ts): its site stays unapplied. */
  rebuildHeld?: boolean;
}

/** An agent deleted while its certificates were made: nothing is owed, nothing is marked. */
const AGENT_GONE = Symbol('agent gone');

async function computeRouter(
  routerKey: string,
  inputs: FogInputs,
  computation: Computation,
): Promise<Owed | typeof AGENT_GONE> {
  const { agent, defaultRouter } = inputs;
  const items = agent && computation.fabric ? await agentItems(agent, defaultRouter) : undefined;
  if (items === AGENT_GONE) return AGENT_GONE;
  if (!agent && routerKey !== DEFAULT_ROUTER) await forgetRouter(routerKey);
  const written = await routerConfig(routerKey, inputs, computation);
  const { restart, links, held } = await rebuildToTell(agent, written, inputs);
  const owed: Owed = {
    waits: undefined,
    raise: agent ? [...(items?.flags ?? []), ...flagsOwedFor({ written: written.written, restart })] : [],
    ...(restart ? { restart } : {}),
    ...(links ? { links } : {}),
    ...(held ? { rebuildHeld: true } : {}),
  };
  if (!computation.fabric) return owed;
  try {
    return { ...owed, waits: await agentNats(routerKey, agent, items?.waitingFor ?? null, inputs.platform) };
  } catch (error) {
    // What was written stands: the agent is told of it before the message is retried.
    await tellAgent(routerKey, owed);
    throw error;
  }
}

/**
 * The rebuild a computation owes its agent and may tell now, and the links its router is to run once
 * told: no rebuild while an agent it is to dial anew is not ready for the dial (see link-rollout.ts);
 * that rebuild stays owed, and the next computation tells it. A router that owes none runs its stored
 * links: those are recorded the first time (`linksTold`), for its first rebuild's order.
 */
async function rebuildToTell(
  agent: AgentRow | undefined,
  written: Awaited<ReturnType<typeof reconcileRouter>>,
  inputs: FogInputs,
): Promise<{ restart?: { digest: string }; links?: LinksTold; held?: boolean }> {
  if (!agent || !written.managed) return {};
  if (!written.restart && inputs.requests.linksTold) return {};
  return observeStep('fog: rollout order', async () => {
    // A computation of the own part alone composes no whole config: the stored one holds what it wrote.
    const planned = written.config ?? (await getRouterConfig(agent.uuid))?.config;
    if (!written.restart) return planned ? { links: linksOf(planned) } : {};
    if (!planned) return { restart: written.restart };
    const { rollout, linksTold } = inputs.requests;
    const gate = await rolloutGate(agent, planned, rollout, linksTold);
    if (gate === 'tell') return { restart: written.restart, links: linksOf(planned) };
    // A held rebuild is owed all the same: the site is not applied until it is told and acknowledged.
    await markSitePending(agent.uuid, { router: true }, await changeCounterNow(agent.uuid), {
      awaiting: true,
    });
    return { held: true };
  });
}

/**
 * Tells the agent what it is owed: with `completed`, in the write that marks the computation's
 * requests covered (and records its platform status); without, on its own (a computation that failed
 * after writing). A rebuild told is recorded after, so one that stopped in between is told again.
 */
async function tellAgent(
  routerKey: string,
  owed: Owed,
  completed?: { computation: Computation; status?: PlatformStatusRow | undefined },
): Promise<void> {
  let stamp: number | undefined;
  if (completed) {
    const { computation, status } = completed;
    stamp = await markRouterRequestsCompleted(routerKey, computation.coveredUpTo, {
      fabric: computation.fabric,
      full: computation.full,
      ...(status ? { status } : {}),
      raise: owed.raise,
      ...(owed.links ? { linksTold: owed.links } : {}),
    });
  } else if (owed.raise.length > 0) {
    stamp = await raiseChangeFlags(routerKey, owed.raise);
  }
  // A router write or rebuild told: its marker waits for this raise.
  if (stamp !== undefined && owed.raise.includes('microserviceConfig'))
    await markTold(routerKey, { router: true }, stamp, { stillOwed: owed.rebuildHeld === true });
  if (!completed && owed.links) await putLinksTold(routerKey, owed.links);
  if (owed.restart) await rebuildTold(routerKey, owed.restart);
}

/**
 * The agent's entries in the token index (so service fan-outs find it by what its tags select) and its
 * router certificates (see `reconcilePlatform`), before its router config, which names only the
 * certificates that exist. The entries it lacks and the certificates it gets for the first time are
 * written together in one batch write; the request that asked for this reconcile usually recorded the
 * entries' tokens already (see `Applied`), else they are recorded first here.
 */
async function agentItems(agent: AgentRow, defaultRouter: DefaultRouterRow | undefined) {
  return observeStep('fog: platform', async () => {
    const tokens = agentIndexTokens(agent, config().serviceAnnotationTag);
    const owner = { agent: agent.uuid };
    const stale = await recordTokenIntent(owner, tokens, await getApplied(owner));
    const index = await agentTokenWrites(agent.uuid, tokens, stale);
    const platform = await reconcilePlatform(agent, defaultRouter);
    await batchWriteItems([...index.puts, ...platform.created.map(certificateItem)], index.deletes);
    await forgetApplied(owner, { tokens: stale });
    // Deleted while its certificates were made: its delete may have cleaned up before they were written.
    if (platform.created.length > 0 && !(await agentExists(agent.uuid))) {
      await deleteCertificatesOf(
        agent.uuid,
        platform.created.map((certificate) => certificate.name),
      );
      return AGENT_GONE;
    }
    return platform;
  });
}

/** Whether the agent's row is still there, read from the store (not from the reconcile's read snapshot). */
async function agentExists(uuid: string): Promise<boolean> {
  return (await outsideReadSnapshot(() => getAgentRow(uuid))) !== undefined;
}

/** A router whose agent is gone: its config, its pending-site markers and its certificates go too. */
async function forgetRouter(routerKey: string): Promise<void> {
  await Promise.all([
    deleteRouterConfig(routerKey),
    forgetPendingSites(routerKey),
    deleteCertificatesOf(routerKey),
  ]);
}

/** The router's config written as the store says it should be; the agent is told by the caller. */
function routerConfig(routerKey: string, inputs: FogInputs, computation: Computation) {
  const { agent, defaultRouter } = inputs;
  return observeStep('fog: router reconcile', () =>
    reconcileRouter(routerKey, defaultRouter, {
      ...(agent ? { agent } : {}),
      ownPart: computation.fabric,
      bridges: computation.full ? 'full' : 'if-moved',
    }),
  );
}

/**
 * The agent's NATS process; a failure is recorded in the agent's status and then fails the message,
 * which is retried. Returns what the agent's platform waits for (undefined: the agent is gone).
 */
async function agentNats(
  agentUuid: string,
  agent: AgentRow | undefined,
  routerWaits: string | null,
  /** The status as this reconcile read it (only the router's own reconciles write it). */
  platform: PlatformStatusRow | undefined,
): Promise<string | null | undefined> {
  let natsWaits: string | null;
  try {
    natsWaits = await observeStep('fog: nats', () => reconcileNats(agentUuid, agent));
  } catch (error) {
    if (agent) {
      const waits = joinWaits(routerWaits, `NATS: ${(error as Error).message}`);
      const status = platformStatusChange(platform, waits);
      if (status) await putPlatformStatus(agent.uuid, status);
    }
    throw error;
  }
  return agent ? joinWaits(routerWaits, natsWaits) : undefined;
}

const joinWaits = (...waits: (string | null)[]) => waits.filter(Boolean).join('; ') || null;
