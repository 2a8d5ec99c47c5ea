import { DEFAULT_NATS_HUB } from '../domain/nats-conf.js';
import { ValidationError } from '../errors.js';
import { type AgentRow, getAgentRows } from '../store/agents.js';
import {
  forgetReference,
  referenceTarget,
  referenceTargets,
  referencingSources,
} from '../store/references.js';

/**
 * A NATS leaf's references to the servers it links to (see store/references.ts): made after its row is
 * written, undone when a server is gone, and read to find the leaves of a server.
 */

export const notNatsServer = (reference: string) =>
  new ValidationError(
    `Field 'upstreamNatsServers': ${JSON.stringify(reference)} is not a NATS server (an agent with natsMode server, or ${DEFAULT_NATS_HUB})`,
  );

/** The NATS servers (agent uuids) a leaf links to; the NATS hub is not an agent. */
export const natsServersOf = (row: Pick<AgentRow, 'upstreamNatsServers'> | undefined) =>
  (row?.upstreamNatsServers ?? []).filter((server) => server !== DEFAULT_NATS_HUB);

/**
 * A leaf's references to the servers it newly links to, made after its row is written (see
 * store/references.ts): each recorded under the server, then the server touched on condition it is
 * still a NATS server. Returns the servers that no longer are (or are gone); their references are undone.
 */
export async function referenceNatsServers(leaf: AgentRow, before: AgentRow | undefined): Promise<string[]> {
  const added = natsServersOf(leaf).filter((uuid) => !natsServersOf(before).includes(uuid));
  return referenceTargets(leaf.uuid, 'nats-upstream', added, referenceTarget.agent, {
    expression: 'natsMode = :server',
    values: { ':server': 'server' },
  });
}

export async function forgetNatsServers(leaf: string, servers: readonly string[]): Promise<void> {
  for (const server of servers) await forgetReference(referenceTarget.agent(server), 'nats-upstream', leaf);
}

/** The leaves that link to a NATS server, found by their reference items (read consistently). */
export async function leavesOf(server: AgentRow): Promise<AgentRow[]> {
  const sources = await referencingSources(referenceTarget.agent(server.uuid), 'nats-upstream');
  const rows = await getAgentRows(sources);
  return [...rows.values()].filter((row) => row.upstreamNatsServers?.includes(server.uuid));
}
