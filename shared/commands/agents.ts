import { randomUUID } from 'node:crypto';
import { config } from '../context.js';
import {
  type CreateAgentBody,
  DEFAULT_ROUTER_PORTS,
  type NatsMode,
  type PatchAgentBody,
  routerPortsOf,
} from '../domain/agent-schema.js';
import {
  DEFAULT_JETSTREAM_SIZES,
  DEFAULT_NATS_HUB,
  DEFAULT_NATS_PORTS,
  natsPortsOf,
  normalizeStoreSize,
} from '../domain/nats-conf.js';
import { DEFAULT_ROUTER } from '../domain/placement.js';
import { type NamedPort, portSetProblem } from '../domain/port-set.js';
import type { RouterMode } from '../domain/router-objects.js';
import { natsCertificateSpecs, routerCertificateSpecs } from '../domain/router-site.js';
import { ConflictError, ContentionError, ValidationError } from '../errors.js';
import { askRouterReconciles } from '../queue/publishers.js';
import { CONFLICT, retryOnConflict } from '../retry.js';
import { deleteAgentReports } from '../store/agent-reports.js';
import {
  type AgentRow,
  claimSystemAgent,
  deleteAgentRow,
  getAgentRow,
  getAgentUuidByName,
  hasAnyAgent,
  listAgentRows,
  putNewAgentRow,
  releaseSystemAgent,
  replaceAgentRow,
} from '../store/agents.js';
import { listMicroservicesByAgent } from '../store/applications.js';
import { forgetApplied, getApplied } from '../store/applied.js';
import { deleteCertificatesOf } from '../store/certificates.js';
import { deleteAgentCredentials } from '../store/credentials.js';
import { getNatsHub, putNatsHub, putNatsHubIfAbsent, releaseNatsHub } from '../store/nats.js';
import { forgetPendingSites, markNewSite } from '../store/pending-sites.js';
import { deletePlatformStatus } from '../store/platform.js';
import { deleteDefaultRouter, getDefaultRouter, putDefaultRouterIfAbsent } from '../store/routers.js';
import { listServicesByConnectorRouter, listServicesByHub } from '../store/services.js';
import { syncTokenIndex } from '../store/token-index.js';
import { requireAgent, tagWarnings } from './agent-views.js';
import { removeMicroservice } from './microservices.js';
import {
  forgetNatsServers,
  leavesOf,
  natsServersOf,
  notNatsServer,
  referenceNatsServers,
} from './nats-references.js';
import { findAgent } from './resolve.js';
import { followSystemAgentRouter } from './router.js';
import {
  downstreamOf,
  forgetUpstreamRouters,
  notInteriorRouter,
  referenceUpstreamRouters,
  upstreamAgentsOf,
} from './router-references.js';

/**
 * Creates an agent. On an empty remote control plane the first agent is promoted to the system agent
 * (interior router, NATS server) and its router becomes the default router when none exists yet.
 */
export async function createAgent(body: CreateAgentBody): Promise<{ uuid: string; warnings?: string[] }> {
  const kubernetes = config().controlPlane === 'kubernetes';
  if (body.isSystem && kubernetes) {
    throw new ValidationError("Field 'isSystem' must not be true when the control plane is Kubernetes");
  }
  const uuid = body.uuid ?? randomUUID().replaceAll('-', '');
  await refuseIdentityCrossing(body.name, body.uuid);
  let promote = false;
  // O(1): one item of the agent list tells whether the cluster is empty; the claim decides the winner.
  if (!kubernetes && !(await hasAnyAgent())) promote = await claimSystemAgent(uuid);
  if (body.isSystem && !promote) {
    throw new ValidationError(
      "Field 'isSystem': this control plane already has its system agent (the first agent)",
    );
  }
  const routerMode: RouterMode = promote ? 'interior' : (body.routerMode ?? 'edge');
  const now = new Date().toISOString();
  const row: AgentRow = {
    uuid,
    name: body.name,
    host: body.host ?? null,
    tags: body.tags ?? [],
    routerMode,
    ...routerPorts(routerMode, body),
    upstreamRouters: promote ? [] : await resolveUpstreams(body.upstreamRouters, routerMode, uuid),
    isSystem: promote,
    ...(await natsFields(body, promote ? 'server' : (body.natsMode ?? 'leaf'), uuid)),
    fogTypeId: body.fogType ?? 0,
    generation: 1,
    observedGeneration: 0,
    createdAt: now,
    updatedAt: now,
  };
  requireRouterHost(row);
  requireNatsHost(row);
  requireDistinctPorts(row, body);
  try {
    await putNewAgentRow(row);
  } catch (error) {
    if (promote) await releaseSystemAgent(uuid);
    throw error;
  }
  const refused = await referenceNatsServers(row, undefined);
  if (refused.length > 0) {
    await removeNewAgent(row);
    throw notNatsServer(refused[0]!);
  }
  const refusedUpstreams = await referenceUpstreamRouters(row, undefined);
  if (refusedUpstreams.length > 0) {
    await removeNewAgent(row);
    throw notInteriorRouter(refusedUpstreams[0]!);
  }
  // Until its router's first config is written and it acknowledges it, the agent's site is not applied.
  if (row.routerMode !== 'none') await markNewSite(uuid);
  if (promote) {
    // Its NATS server is the hub leaves dial; the NATS fabric itself builds on this record.
    await putNatsHubIfAbsent({
      host: row.host ?? '',
      ...natsPortsOf(row),
      agentUuid: uuid,
      updatedAt: now,
    });
    await putDefaultRouterIfAbsent({
      host: row.host ?? '',
      ...routerPortsOf(row),
      agentUuid: uuid,
      updatedAt: now,
    });
  }
  await askRouterReconciles([uuid], { agents: { [uuid]: row } });
  const warnings = tagWarnings(row.tags);
  return warnings.length > 0 ? { uuid, warnings } : { uuid };
}

/**
 * Agents are found by uuid or by name (uuid first): a name that is another agent's uuid, or a uuid that
 * is another agent's name, would make one reference name two agents.
 */
async function refuseIdentityCrossing(name: string, uuid: string | undefined): Promise<void> {
  const [named, byName] = await Promise.all([
    getAgentRow(name),
    uuid === undefined ? undefined : getAgentUuidByName(uuid),
  ]);
  // The same agent created again is a duplicate (409 when its row is written), not a crossing.
  if (named && named.uuid !== uuid) {
    throw new ValidationError(
      `Field 'name': ${JSON.stringify(name)} is the uuid of agent ${JSON.stringify(named.name)}; a name must not pass for another agent's uuid`,
    );
  }
  if (byName !== undefined && byName !== uuid) {
    throw new ValidationError(
      `Field 'uuid': ${JSON.stringify(uuid)} is the name of agent ${byName}; a uuid must not pass for another agent's name`,
    );
  }
}

function routerPorts(
  routerMode: RouterMode,
  body: Pick<CreateAgentBody, 'messagingPort' | 'interRouterPort' | 'edgeRouterPort'>,
) {
  if (routerMode === 'none') {
    return { messagingPort: body.messagingPort ?? null, interRouterPort: null, edgeRouterPort: null };
  }
  return {
    messagingPort: body.messagingPort ?? DEFAULT_ROUTER_PORTS.messagingPort,
    interRouterPort:
      routerMode === 'interior' ? (body.interRouterPort ?? DEFAULT_ROUTER_PORTS.interRouterPort) : null,
    edgeRouterPort:
      routerMode === 'interior' ? (body.edgeRouterPort ?? DEFAULT_ROUTER_PORTS.edgeRouterPort) : null,
  };
}

/**
 * An agent's NATS settings: its mode, ports (defaults 4222/6222/7422/8883/8222), JetStream sizes, and for a
 * leaf the servers it links to (omitted: the NATS hub, `default-nats-hub`); each must be a NATS server.
 */
async function natsFields(
  body: Pick<
    CreateAgentBody,
    | 'natsServerPort'
    | 'natsClusterPort'
    | 'natsLeafPort'
    | 'natsMqttPort'
    | 'natsHttpPort'
    | 'jsStorageSize'
    | 'jsMemoryStoreSize'
    | 'upstreamNatsServers'
  >,
  natsMode: NatsMode,
  self: string,
): Promise<
  Pick<AgentRow, 'natsMode' | 'natsPorts' | 'jsStorageSize' | 'jsMemoryStoreSize' | 'upstreamNatsServers'>
> {
  const upstreams: string[] = [];
  for (const reference of natsMode === 'leaf' ? (body.upstreamNatsServers ?? [DEFAULT_NATS_HUB]) : []) {
    if (reference === DEFAULT_NATS_HUB) {
      upstreams.push(DEFAULT_NATS_HUB);
      continue;
    }
    const upstream = await findAgent(reference);
    if (!upstream || upstream.uuid === self || upstream.natsMode !== 'server') throw notNatsServer(reference);
    upstreams.push(upstream.uuid);
  }
  return {
    natsMode,
    natsPorts: {
      serverPort: body.natsServerPort ?? DEFAULT_NATS_PORTS.serverPort,
      clusterPort: body.natsClusterPort ?? DEFAULT_NATS_PORTS.clusterPort,
      leafPort: body.natsLeafPort ?? DEFAULT_NATS_PORTS.leafPort,
      mqttPort: body.natsMqttPort ?? DEFAULT_NATS_PORTS.mqttPort,
      httpPort: body.natsHttpPort ?? DEFAULT_NATS_PORTS.httpPort,
    },
    jsStorageSize: normalizeStoreSize(body.jsStorageSize ?? DEFAULT_JETSTREAM_SIZES.jsStorageSize),
    jsMemoryStoreSize: normalizeStoreSize(
      body.jsMemoryStoreSize ?? DEFAULT_JETSTREAM_SIZES.jsMemoryStoreSize,
    ),
    upstreamNatsServers: [...new Set(upstreams)],
  };
}

function requireNatsHost(row: AgentRow) {
  if (row.natsMode === 'server' && !row.host) {
    throw new ValidationError("Required field 'host' is missing (natsMode server needs the agent's host)");
  }
}

/**
 * The ports the agent's router and NATS process listen on, as its row now holds them, must differ (see
 * `portSetProblem`); the fields the request set are named as the ones that collide.
 */
function requireDistinctPorts(row: AgentRow, body: object) {
  const nats = natsPortsOf(row);
  const ports: NamedPort[] = [
    ...(row.routerMode === 'none' ? [] : [{ field: 'messagingPort', port: row.messagingPort }]),
    ...(row.routerMode === 'interior'
      ? [
          { field: 'interRouterPort', port: row.interRouterPort },
          { field: 'edgeRouterPort', port: row.edgeRouterPort },
        ]
      : []),
    ...(row.natsMode === 'none'
      ? []
      : [
          { field: 'natsServerPort', port: nats.serverPort },
          { field: 'natsClusterPort', port: nats.clusterPort },
          { field: 'natsLeafPort', port: nats.leafPort },
          { field: 'natsMqttPort', port: nats.mqttPort },
          { field: 'natsHttpPort', port: nats.httpPort },
        ]),
  ].filter((entry): entry is NamedPort => typeof entry.port === 'number');
  const given = (entry: NamedPort) => entry.field in body;
  const problem = portSetProblem([...ports.filter((p) => !given(p)), ...ports.filter(given)], {
    routerManagement: row.routerMode !== 'none',
  });
  if (problem) throw new ValidationError(problem);
}

function requireRouterHost(row: AgentRow) {
  if (row.routerMode !== 'none' && !row.host) {
    throw new ValidationError(
      `Required field 'host' is missing (router mode ${row.routerMode} needs the agent's host)`,
    );
  }
}

/** Upstream routers as uuids (or `default-router`); each must be an interior router. */
async function resolveUpstreams(
  references: string[] | undefined,
  routerMode: RouterMode,
  self: string,
): Promise<string[]> {
  if (routerMode === 'none') {
    if (references && references.length > 0) {
      throw new ValidationError(
        `Field 'upstreamRouters': an agent with router mode none has no router to link, got ${JSON.stringify(references)}`,
      );
    }
    return [];
  }
  // The default router may be registered after the agent: the link is made when it is.
  if (references === undefined) return [DEFAULT_ROUTER];
  const resolved: string[] = [];
  for (const reference of references) {
    if (reference === DEFAULT_ROUTER) {
      resolved.push(DEFAULT_ROUTER);
      continue;
    }
    const upstream = await findAgent(reference);
    if (!upstream)
      throw new ValidationError(`Field 'upstreamRouters': agent ${JSON.stringify(reference)} not found`);
    if (upstream.uuid === self)
      throw new ValidationError(`Field 'upstreamRouters': an agent cannot be its own upstream`);
    if (upstream.routerMode !== 'interior') {
      throw new ValidationError(
        `Field 'upstreamRouters': agent ${JSON.stringify(upstream.name)} has router mode ${upstream.routerMode}; an upstream router must be interior`,
      );
    }
    const loop = await pathBack(upstream, self);
    if (loop) {
      throw new ValidationError(
        `Field 'upstreamRouters': agent ${JSON.stringify(upstream.name)} already links to this agent (${loop}); links between routers must not form a cycle`,
      );
    }
    resolved.push(upstream.uuid);
  }
  return [...new Set(resolved)];
}

/**
 * The chain of upstream links from `from` back to agent `self` (names joined by →), or undefined when
 * none leads there.
 */
async function pathBack(from: AgentRow, self: string): Promise<string | undefined> {
  const seen = new Set<string>();
  const queue: { agent: AgentRow; path: string[] }[] = [{ agent: from, path: [from.name] }];
  while (queue.length > 0) {
    const { agent, path } = queue.shift()!;
    for (const next of agent.upstreamRouters) {
      if (next === self) return [...path, 'this agent'].join(' → ');
      if (next === DEFAULT_ROUTER || seen.has(next)) continue;
      seen.add(next);
      const row = await getAgentRow(next);
      if (row) queue.push({ agent: row, path: [...path, row.name] });
    }
  }
  return undefined;
}

/** Partial update; `tags`, when present, replaces the set. Reconciles the agent's router. */
export async function updateAgent(uuid: string, patch: PatchAgentBody): Promise<void> {
  await retryOnConflict(async () => {
    const row = await requireAgent(uuid);
    const next = await changedAgentRow(row, patch);
    if (!(await replaceAgentRow(next, row))) return CONFLICT;
    const refused = await referenceNatsServers(next, row);
    if (refused.length > 0) {
      await restoreUpstreams(uuid, row);
      throw notNatsServer(refused[0]!);
    }
    const refusedUpstreams = await referenceUpstreamRouters(next, row);
    if (refusedUpstreams.length > 0) {
      await restoreUpstreams(uuid, row);
      throw notInteriorRouter(refusedUpstreams[0]!);
    }
    await forgetNatsServers(
      uuid,
      natsServersOf(row).filter((server) => !natsServersOf(next).includes(server)),
    );
    await forgetUpstreamRouters(
      uuid,
      upstreamAgentsOf(row).filter((upstream) => !upstreamAgentsOf(next).includes(upstream)),
    );
    await askRouterReconciles(
      [uuid, ...(await updateDefaultRouterFor(row, next)), ...(await updateNatsHubFor(row, next))],
      { agents: { [uuid]: next } },
    );
  }, agentContention(uuid));
}

/** The agent row a change makes of `row`, every rule checked (its name and role stay, its ports differ). */
async function changedAgentRow(row: AgentRow, patch: PatchAgentBody): Promise<AgentRow> {
  const { routerMode, natsMode } = await checkedModes(row, patch);
  const next: AgentRow = {
    ...row,
    host: patch.host ?? row.host,
    tags: patch.tags ?? row.tags,
    routerMode,
    ...routerPorts(routerMode, {
      messagingPort: patch.messagingPort ?? row.messagingPort ?? undefined,
      interRouterPort: patch.interRouterPort ?? row.interRouterPort ?? undefined,
      edgeRouterPort: patch.edgeRouterPort ?? row.edgeRouterPort ?? undefined,
    }),
    upstreamRouters: await changedUpstreams(row, patch, routerMode),
    ...(await natsFields(
      {
        ...patch,
        natsServerPort: patch.natsServerPort ?? row.natsPorts?.serverPort,
        natsClusterPort: patch.natsClusterPort ?? row.natsPorts?.clusterPort,
        natsLeafPort: patch.natsLeafPort ?? row.natsPorts?.leafPort,
        natsMqttPort: patch.natsMqttPort ?? row.natsPorts?.mqttPort,
        natsHttpPort: patch.natsHttpPort ?? row.natsPorts?.httpPort,
        jsStorageSize: patch.jsStorageSize ?? row.jsStorageSize,
        jsMemoryStoreSize: patch.jsMemoryStoreSize ?? row.jsMemoryStoreSize,
        // A server that becomes a leaf links to the hub unless the change names its servers.
        upstreamNatsServers:
          patch.upstreamNatsServers ?? (row.natsMode === 'leaf' ? row.upstreamNatsServers : undefined),
      },
      natsMode,
      row.uuid,
    )),
    fogTypeId: patch.fogType ?? row.fogTypeId,
    generation: row.generation + 1,
    updatedAt: new Date().toISOString(),
  };
  requireRouterHost(next);
  requireNatsHost(next);
  requireDistinctPorts(next, patch);
  return next;
}

/** The router and NATS modes a change leaves the agent in, once what depends on them allows it. */
async function checkedModes(row: AgentRow, patch: PatchAgentBody) {
  if (patch.name !== undefined && patch.name !== row.name) {
    throw new ValidationError(
      `Field 'name' cannot be changed (stored ${JSON.stringify(row.name)}, got ${JSON.stringify(patch.name)}): an agent's name names its certificates`,
    );
  }
  const routerMode = patch.routerMode ?? row.routerMode;
  if (row.isSystem && routerMode !== 'interior') {
    throw new ValidationError(
      `Field 'routerMode': the system agent must stay interior, got ${JSON.stringify(routerMode)}`,
    );
  }
  if (routerMode !== row.routerMode) await checkRouterModeChange(row, routerMode);
  const natsMode = patch.natsMode ?? row.natsMode;
  if (row.isSystem && natsMode !== 'server') {
    throw new ValidationError(
      `Field 'natsMode': the system agent must stay server, got ${JSON.stringify(natsMode)}`,
    );
  }
  await checkNatsModeChange(row, natsMode);
  if (patch.isSystem !== undefined && patch.isSystem !== row.isSystem) {
    throw new ValidationError("Field 'isSystem' cannot be changed");
  }
  return { routerMode, natsMode };
}

/** The upstream routers after a change: resolved again when the change names them or moves the mode. */
function changedUpstreams(
  row: AgentRow,
  patch: PatchAgentBody,
  routerMode: RouterMode,
): Promise<string[]> | string[] {
  if (row.isSystem) return [];
  if (patch.upstreamRouters === undefined && routerMode === row.routerMode) return row.upstreamRouters;
  return resolveUpstreams(
    patch.upstreamRouters ?? (routerMode === 'none' ? [] : row.upstreamRouters),
    routerMode,
    row.uuid,
  );
}

/**
 * Writes the NATS hub record after its agent changed: on a remote control plane it follows the hub
 * agent's host and NATS ports (as the default router follows its router). Returns the agents to
 * re-render: every NATS agent dials or routes to the hub.
 */
async function updateNatsHubFor(before: AgentRow, after: AgentRow): Promise<string[]> {
  const ports = natsPortsOf(after);
  const moved = before.host !== after.host || JSON.stringify(natsPortsOf(before)) !== JSON.stringify(ports);
  if (!moved) return [];
  const hub = await getNatsHub();
  if (!hub || hub.agentUuid !== after.uuid) return [];
  await putNatsHub({ ...hub, host: after.host ?? hub.host, ...ports, updatedAt: new Date().toISOString() });
  return (await listAgentRows())
    .filter((agent) => agent.natsMode !== 'none' && agent.uuid !== after.uuid)
    .map((agent) => agent.uuid);
}

/**
 * Writes the default router's record when this agent runs it (it follows the system agent's router),
 * and returns the routers whose links embed this agent's router (its host, ports or mode changed): the
 * agents that list it as an upstream and, when it is the default router, those that dial that.
 */
async function updateDefaultRouterFor(before: AgentRow, after: AgentRow): Promise<string[]> {
  const moved =
    before.host !== after.host ||
    before.routerMode !== after.routerMode ||
    before.interRouterPort !== after.interRouterPort ||
    before.edgeRouterPort !== after.edgeRouterPort ||
    before.messagingPort !== after.messagingPort;
  if (!moved) return [];
  const defaultRouter = await getDefaultRouter();
  const isDefault = defaultRouter?.agentUuid === after.uuid;
  if (isDefault) await followSystemAgentRouter(defaultRouter, after);
  return (await listAgentRows())
    .filter((agent) => agent.uuid !== after.uuid && agent.routerMode !== 'none')
    .filter(
      (agent) =>
        agent.upstreamRouters.includes(after.uuid) ||
        (isDefault && agent.upstreamRouters.includes(DEFAULT_ROUTER)),
    )
    .map((agent) => agent.uuid);
}

const agentContention = (uuid: string) => ({
  times: 5,
  exhausted: () => new ContentionError(`Agent ${uuid} is being changed concurrently; retry the request`),
});

/** An agent whose creation could not complete (a server it links to is gone) goes again. */
async function removeNewAgent(row: AgentRow): Promise<void> {
  await retryOnConflict(async () => {
    const current = await getAgentRow(row.uuid);
    if (!current) return;
    if (!(await deleteAgentRow(current))) return CONFLICT;
    await forgetNatsServers(row.uuid, natsServersOf(row));
    await forgetUpstreamRouters(row.uuid, upstreamAgentsOf(row));
  }, agentContention(row.uuid));
}

/** A NATS server that leaves link to stays a server (they would lose their upstream). */
async function checkNatsModeChange(row: AgentRow, natsMode: NatsMode) {
  if (row.natsMode !== 'server' || natsMode === 'server') return;
  const leaves = await leavesOf(row);
  if (leaves.length > 0) {
    throw new ValidationError(
      `Field 'natsMode': agent ${row.name} is the upstream NATS server of ${leaves.map((a) => a.name).join(', ')}; it must stay server`,
    );
  }
}

async function checkRouterModeChange(row: AgentRow, routerMode: RouterMode) {
  if (routerMode === 'none') {
    const backed = await listServicesByConnectorRouter(row.uuid);
    if (backed.length > 0) {
      throw new ValidationError(
        `Field 'routerMode' cannot be "none": agent ${row.name} backs services ${backed.map((s) => s.name).join(', ')}, and a TCP bridge service requires a router on the agent`,
      );
    }
  }
  if (row.routerMode === 'interior') {
    const downstream = await downstreamOf(row);
    if (downstream.length > 0) {
      throw new ValidationError(
        `Field 'routerMode': agent ${row.name} is the upstream router of ${downstream.map((a) => a.name).join(', ')}; it must stay interior`,
      );
    }
    const bridged = await listServicesByHub(row.uuid);
    if (bridged.length > 0) {
      throw new ValidationError(
        `Field 'routerMode': agent ${row.name} is the defaultBridge of ${bridged.map((s) => s.name).join(', ')}; it must stay interior`,
      );
    }
  }
}

/**
 * Deletes an agent that nothing depends on: it must not back or bridge a service, nor be another
 * router's upstream, nor be the system agent while it is the default router. Its microservices go too.
 */
export async function deleteAgent(uuid: string): Promise<void> {
  await retryOnConflict(async () => {
    // Re-read on every attempt: a concurrent delete makes this a 404, a concurrent change re-checks.
    const row = await requireAgent(uuid);
    const runsDefaultRouter = await checkAgentDeletable(row);
    for (const microservice of await listMicroservicesByAgent(uuid)) await removeMicroservice(microservice);
    // Its token-index entries go first: a service fan-out must not find it once it is gone. A lost race
    // below leaves the agent in place, and its next fog reconcile writes them again.
    const tokensLeft = await syncTokenIndex({ agent: uuid }, [], await getApplied({ agent: uuid }));
    if (!(await deleteAgentRow(row))) return CONFLICT;
    await forgetApplied({ agent: uuid }, { tokens: tokensLeft });
    await forgetNatsServers(uuid, natsServersOf(row));
    await forgetUpstreamRouters(uuid, upstreamAgentsOf(row));
    await Promise.all([
      deleteAgentCredentials(uuid),
      deleteAgentReports(uuid),
      deleteAgentFabric(row),
      forgetPendingSites(uuid),
    ]);
    if (row.isSystem) await Promise.all([releaseSystemAgent(uuid), releaseNatsHub(uuid)]);
    if (runsDefaultRouter) await deleteDefaultRouter();
    await askRouterReconciles([uuid]);
  }, agentContention(uuid));
}

/**
 * Asks for a fresh reconcile of the agent's router (and its token index), as the sweeper's drift check
 * would: the worker recomputes the router's bridge entries from the store and writes what differs.
 */
export async function requestAgentReconcile(uuid: string): Promise<{ uuid: string; reconcile: 'requested' }> {
  await requireAgent(uuid);
  await askRouterReconciles([uuid], { full: true });
  return { uuid, reconcile: 'requested' };
}

/** The agent's certificates (by name, and whatever the index still lists) and its platform status. */
async function deleteAgentFabric(row: AgentRow): Promise<void> {
  await deleteCertificatesOf(row.uuid, [
    ...routerCertificateSpecs({ ...row, routerMode: 'edge' }).map((spec) => spec.name),
    ...natsCertificateSpecs({ ...row, natsMode: 'server' }).map((spec) => spec.name),
  ]);
  await deletePlatformStatus(row.uuid);
}

/** Refuses to delete an agent something depends on; returns whether it runs the default router. */
async function checkAgentDeletable(row: AgentRow): Promise<boolean> {
  const [backed, bridged, agents, defaultRouter] = await Promise.all([
    listServicesByConnectorRouter(row.uuid),
    listServicesByHub(row.uuid),
    listAgentRows(),
    getDefaultRouter(),
  ]);
  const runsDefaultRouter = defaultRouter?.agentUuid === row.uuid;
  const onDefaultRouter = runsDefaultRouter
    ? [...(await listServicesByHub(DEFAULT_ROUTER)), ...(await listServicesByConnectorRouter(DEFAULT_ROUTER))]
    : [];
  const dependants = [...backed, ...bridged, ...onDefaultRouter].map((service) => service.name);
  if (dependants.length > 0) {
    throw new ConflictError(
      `Agent ${row.name} is used by services ${[...new Set(dependants)].join(', ')}; delete them first`,
    );
  }
  const downstream = await downstreamOf(row);
  if (downstream.length > 0) {
    throw new ConflictError(
      `Agent ${row.name} is the upstream router of ${downstream.map((a) => a.name).join(', ')}`,
    );
  }
  const leaves = await leavesOf(row);
  if (leaves.length > 0) {
    throw new ConflictError(
      `Agent ${row.name} is the upstream NATS server of ${leaves.map((a) => a.name).join(', ')}`,
    );
  }
  if (runsDefaultRouter && agents.length > 1) {
    throw new ConflictError(`Agent ${row.name} runs the default router; delete the other agents first`);
  }
  return runsDefaultRouter;
}

/** A change that named an upstream (NATS server or router) that is gone is undone: its links are what they were. */
async function restoreUpstreams(uuid: string, before: AgentRow): Promise<void> {
  await retryOnConflict(async () => {
    const row = await getAgentRow(uuid);
    if (!row) return;
    const next = {
      ...row,
      upstreamNatsServers: before.upstreamNatsServers ?? [],
      upstreamRouters: before.upstreamRouters,
      generation: row.generation + 1,
    };
    if (!(await replaceAgentRow(next, row))) return CONFLICT;
    await askRouterReconciles([uuid]);
  }, agentContention(uuid));
}
