import { DEFAULT_ROUTER } from '../domain/placement.js';
import { ValidationError } from '../errors.js';
import { type AgentRow, getAgentRows, listAgentRows } from '../store/agents.js';
import {
  forgetReference,
  referenceTarget,
  referenceTargets,
  referencingSources,
} from '../store/references.js';

/**
 * A router's references to the interior routers it links to (see store/references.ts), as a NATS leaf's
 * to its servers: made after its row is written, undone when an upstream is gone or no longer interior,
 * and read to find the routers below one. A delete or mode change of an upstream and a change naming it
 * can then never both succeed.
 */

export const notInteriorRouter = (reference: string) =>
  new ValidationError(
    `Field 'upstreamRouters': ${JSON.stringify(reference)} is not an interior router (it is gone, or its router mode changed)`,
  );

/** The agents (uuids) a router links to; the default router is not an agent. */
export const upstreamAgentsOf = (row: Pick<AgentRow, 'upstreamRouters'> | undefined) =>
  (row?.upstreamRouters ?? []).filter((upstream) => upstream !== DEFAULT_ROUTER);

/**
 * A router's references to the upstreams it newly links to: each recorded under the upstream, then the
 * upstream touched on condition it is still interior. Returns the upstreams that are not (or are gone);
 * their references are undone.
 */
export async function referenceUpstreamRouters(
  router: AgentRow,
  before: AgentRow | undefined,
): Promise<string[]> {
  const added = upstreamAgentsOf(router).filter((uuid) => !upstreamAgentsOf(before).includes(uuid));
  return referenceTargets(router.uuid, 'router-upstream', added, referenceTarget.agent, {
    expression: 'routerMode = :interior',
    values: { ':interior': 'interior' },
  });
}

export async function forgetUpstreamRouters(router: string, upstreams: readonly string[]): Promise<void> {
  for (const upstream of upstreams)
    await forgetReference(referenceTarget.agent(upstream), 'router-upstream', router);
}

/**
 * The routers that link to `upstream`: those its reference items name (read consistently, each row
 * checked), and any the agent list shows (routers linked before references were kept).
 */
export async function downstreamOf(upstream: AgentRow): Promise<AgentRow[]> {
  const [sources, listed] = await Promise.all([
    referencingSources(referenceTarget.agent(upstream.uuid), 'router-upstream'),
    listAgentRows(),
  ]);
  const rows = await getAgentRows(sources);
  const found = new Map<string, AgentRow>();
  for (const row of [...rows.values(), ...listed])
    if (row.upstreamRouters.includes(upstream.uuid)) found.set(row.uuid, row);
  return [...found.values()];
}
