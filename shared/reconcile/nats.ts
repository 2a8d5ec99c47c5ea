import { randomBytes } from 'node:crypto';
import { config } from '../context.js';
import {
  agentServerRoutes,
  clusterRoutes,
  DEFAULT_JETSTREAM_SIZES,
  DEFAULT_NATS_HUB,
  leafRemotes,
  NATS_PATHS,
  type NatsArtefacts,
  natsArtefacts,
  natsPortsOf,
  renderNatsTemplate,
  serverTemplate,
} from '../domain/nats-conf.js';
import {
  agentCertificateToken,
  NATS_LOCAL_CA,
  NATS_SITE_CA,
  natsCertificateSpecs,
} from '../domain/router-site.js';
import { askNatsHubReconcile, askRouterReconciles } from '../queue/publishers.js';
import { type AgentRow, listAgentRows } from '../store/agents.js';
import type { CertificateRow } from '../store/certificates.js';
import { getMount, mountData, putMountIfChanged } from '../store/mounts.js';
import {
  deleteNatsServer,
  getNatsHub,
  getNatsInstance,
  getNatsServer,
  listNatsServers,
  type NatsHubRow,
  type NatsInstanceRow,
  type NatsRole,
  type NatsServerRow,
  putNatsServer,
} from '../store/nats.js';
import {
  credsOf,
  ensureNatsOperator,
  ensureSystemAccount,
  ensureSystemUser,
} from '../store/nats-identities.js';
import {
  type AccountLink,
  leafAccountLinks,
  linkCredentialsPath,
  repairMicroserviceUsers,
  revokeLeafLinks,
} from './nats-agent-accounts.js';
import { deliver, instanceRow, removeNatsInstance, removeStaleArtefacts } from './nats-instance.js';
import { ensureCertificate, fleetCertificateAuthority } from './platform.js';

type Role = NatsRole;

/**
 * The NATS step of an agent's fog reconcile: from the agent row, the hub record, the fleet's NATS
 * servers and the application accounts its microservices use, it derives the agent's NATS process —
 * certificates, its system user, its leaf links into application accounts, the rendered
 * `server.conf`/`leaf.conf`, the creds files and the microservice that mounts them (the JWT directory is
 * composed when the agent reads it) — writes what differs and tells the agent. Run after the router step, so nothing here
 * can hold the router back. Returns what the agent still waits for (null when nothing).
 */
export async function reconcileNats(agentUuid: string, agent: AgentRow | undefined): Promise<string | null> {
  const [hub, ownEntry, instance] = await Promise.all([
    getNatsHub(),
    getNatsServer(agentUuid),
    getNatsInstance(agentUuid),
  ]);
  await syncServerEntry(agentUuid, agent, ownEntry);
  if (!agent || agent.natsMode === 'none') {
    if (instance) await removeNatsInstance(instance, agent !== undefined);
    return null;
  }
  const plan = await natsPlan(agent, hub);
  if ('waits' in plan) return plan.waits;
  const links = await accountLinks(agent, plan.role, instance);
  const written = await writeNatsFiles(agent, plan, links);
  const next = instanceRow(agent, plan.role, written.template, plan.artefacts, written.certificates, links);
  await removeStaleArtefacts(instance, next);
  // Which accounts its JWT directory holds changed: every directory's version moves on (see its reader).
  const directoryChanged = directoryOf(instance) !== directoryOf(next);
  await deliver(agent.uuid, instance, next, { files: written.filesChanged, directory: directoryChanged });
  return null;
}

/**
 * A leaf's links into the accounts of the applications it serves (its microservices' users repaired on
 * the way); a server links into none (its directory holds every account, its microservices connect to
 * it), but its microservices' users are repaired too.
 */
async function accountLinks(agent: AgentRow, role: Role, instance: NatsInstanceRow | undefined) {
  const token = agentCertificateToken(agent.name);
  if (role !== 'leaf') {
    await revokeLeafLinks(token, instance?.leafAccounts ?? []);
    await repairMicroserviceUsers(agent.uuid);
    return [];
  }
  return leafAccountLinks(agent, token, instance?.leafAccounts ?? []);
}

const directoryOf = (instance: NatsInstanceRow | undefined) =>
  instance ? JSON.stringify([instance.role === 'leaf', instance.leafAccounts ?? []]) : '';

/**
 * What an agent's NATS process is to be, or what it waits for: its role, the fleet's NATS CAs, the names
 * of its files, the fleet's servers (only when its files name some) and a leaf's upstreams.
 */
async function natsPlan(agent: AgentRow, hub: NatsHubRow | undefined): Promise<NatsPlan | { waits: string }> {
  const role = roleOf(agent, hub);
  const cas = await Promise.all([
    fleetCertificateAuthority(NATS_SITE_CA),
    fleetCertificateAuthority(NATS_LOCAL_CA),
  ]);
  if (!cas[0] || !cas[1]) {
    const missing = [NATS_SITE_CA, NATS_LOCAL_CA].filter((_, index) => !cas[index]);
    return {
      waits: `NATS waiting for CA ${missing.join(', ')}: the operator imports it with POST /api/v3/certificates/ca (type k8s-secret)`,
    };
  }
  const artefacts = natsArtefacts(agentCertificateToken(agent.name), role);
  // The fleet's NATS servers (one query) only when this agent's files name some: a server's routes, a
  // leaf's upstreams other than the hub.
  const servers = needsServerList(agent, role) ? await listNatsServers() : [];
  const upstreams = role === 'leaf' ? leafUpstreams(agent, hub, servers) : [];
  if (role === 'leaf' && upstreams.length === 0) {
    return {
      waits: hub
        ? `NATS leaf has no upstream NATS server with a host among ${JSON.stringify(agent.upstreamNatsServers)}`
        : 'NATS waiting for the NATS hub: register it with PUT /api/v3/nats/hub',
    };
  }
  return { role, cas: [cas[0], cas[1]], artefacts, hub, servers, upstreams };
}

interface NatsPlan {
  role: Role;
  cas: [CertificateRow, CertificateRow];
  artefacts: ReturnType<typeof natsArtefacts>;
  hub: NatsHubRow | undefined;
  servers: Awaited<ReturnType<typeof listNatsServers>>;
  upstreams: ReturnType<typeof leafUpstreams>;
}

/**
 * The agent's NATS files as its plan makes them: its certificates, the operator, system account and its
 * system user, its JetStream key, the rendered config, the JWT directory and the creds file. Says
 * whether any file changed.
 */
async function writeNatsFiles(agent: AgentRow, plan: NatsPlan, links: AccountLink[]) {
  const { role, artefacts, cas } = plan;
  const specs = natsCertificateSpecs(agent);
  let filesChanged = false;
  for (const spec of specs) {
    if (await ensureCertificate(spec, spec.ca === NATS_SITE_CA ? cas[0] : cas[1], agent.uuid))
      filesChanged = true;
  }
  const [operator, account, user] = await Promise.all([
    ensureNatsOperator(),
    ensureSystemAccount(),
    ensureSystemUser(artefacts.user, role === 'leaf' ? LEAF_CONNECTIONS : SERVER_CONNECTIONS),
  ]);
  const jetstreamKey = await ensureJetstreamKey(artefacts.jetstreamKey, agent.uuid);
  const routes = role === 'leaf' ? [] : serverRoutes(plan.hub, plan.servers);
  const template = role === 'leaf' ? 'leaf.conf' : serverTemplate(routes);
  const serverConf = renderNatsTemplate(template, {
    ...natsVariables(agent, artefacts, role),
    OPERATOR_JWT: operator.jwt,
    SYSTEM_ACCOUNT: account.publicKey,
    JETSTREAM_KEY: jetstreamKey,
    JETSTREAM_PREV_KEY: '',
    NATS_CLUSTER_ROUTES: JSON.stringify(routes),
    NATS_LEAF_REMOTES: JSON.stringify(
      leafRemotes({
        upstreams: plan.upstreams,
        links: [
          { account: account.publicKey, credentials: `${NATS_PATHS.credsDir}/${artefacts.credsKey}` },
          ...links.map((link) => ({ account: link.account, credentials: linkCredentialsPath(link) })),
        ],
        certName: artefacts.serverCertificate,
      }),
    ),
  });
  const creds = {
    [artefacts.credsKey]: credsOf(user),
    ...Object.fromEntries(links.map((l) => [l.key, l.creds])),
  };
  const written = await Promise.all([
    putMountIfChanged(artefacts.configMount, agent.uuid, 'secret', { 'server.conf': serverConf }),
    putMountIfChanged(artefacts.credsMount, agent.uuid, 'secret', creds),
  ]);
  return {
    filesChanged: filesChanged || written.some(Boolean),
    template,
    certificates: specs.map((spec) => spec.name),
  };
}

/** The system users' connection types: servers' admin users connect as clients, leaves' also link. */
const SERVER_CONNECTIONS = ['STANDARD', 'WEBSOCKET'];
const LEAF_CONNECTIONS = ['STANDARD', 'WEBSOCKET', 'LEAFNODE'];

/**
 * Hub on a remote control plane: the agent the hub record names, or the system agent's server while
 * no hub exists. On Kubernetes the hub is the operator's, and no agent is it.
 */
function roleOf(agent: AgentRow, hub: NatsHubRow | undefined): Role {
  if (agent.natsMode !== 'server') return 'leaf';
  if (config().controlPlane === 'remote' && (hub ? hub.agentUuid === agent.uuid : agent.isSystem))
    return 'hub';
  return 'server';
}

/**
 * Keeps the agent's entry among the fleet's NATS servers equal to its row; when the entry changes every
 * other server re-renders its routes, leaves that dial it re-render their remotes, and on Kubernetes the
 * operator's `iofog-nats-config` follows.
 */
async function syncServerEntry(
  agentUuid: string,
  agent: AgentRow | undefined,
  current: NatsServerRow | undefined,
): Promise<void> {
  const wanted =
    agent?.natsMode === 'server' && agent.host
      ? {
          agentUuid,
          host: agent.host,
          clusterPort: natsPortsOf(agent).clusterPort,
          leafPort: natsPortsOf(agent).leafPort,
        }
      : undefined;
  const same =
    current?.host === wanted?.host &&
    current?.clusterPort === wanted?.clusterPort &&
    current?.leafPort === wanted?.leafPort;
  if (same) return;
  const entry = wanted && { ...wanted, updatedAt: new Date().toISOString() };
  if (entry) await putNatsServer(entry);
  else await deleteNatsServer(agentUuid);
  const others = (await listNatsServers()).filter((server) => server.agentUuid !== agentUuid);
  const leaves = (await listAgentRows()).filter((row) => row.upstreamNatsServers?.includes(agentUuid));
  await askRouterReconciles([...others.map((server) => server.agentUuid), ...leaves.map((row) => row.uuid)]);
  if (config().controlPlane === 'kubernetes') await askNatsHubReconcile();
}

const needsServerList = (agent: AgentRow, role: Role) =>
  role !== 'leaf' ||
  (agent.upstreamNatsServers ?? [DEFAULT_NATS_HUB]).some((name) => name !== DEFAULT_NATS_HUB);

/** A leaf's upstreams with their addresses: the hub for `default-nats-hub`, else the named servers. */
function leafUpstreams(agent: AgentRow, hub: NatsHubRow | undefined, servers: NatsServerRow[]) {
  return (agent.upstreamNatsServers ?? [DEFAULT_NATS_HUB]).flatMap((reference) => {
    if (reference === DEFAULT_NATS_HUB) return hub?.host ? [{ host: hub.host, leafPort: hub.leafPort }] : [];
    const server = servers.find((candidate) => candidate.agentUuid === reference);
    return server ? [{ host: server.host, leafPort: server.leafPort }] : [];
  });
}

/**
 * A server's cluster routes: every agent NATS server, itself included, and on Kubernetes the operator's
 * hub (agent servers join the operator's cluster). Sorted, so the file changes only when the
 * set does.
 */
function serverRoutes(hub: NatsHubRow | undefined, servers: NatsServerRow[]): string[] {
  const agentRoutes = agentServerRoutes(servers);
  const hubRoute =
    config().controlPlane === 'kubernetes' && hub?.host
      ? clusterRoutes([{ host: hub.host, clusterPort: hub.clusterPort }])
      : [];
  return [...new Set([...hubRoute, ...agentRoutes])];
}

function natsVariables(agent: AgentRow, artefacts: NatsArtefacts, role: Role): Record<string, string> {
  const ports = natsPortsOf(agent);
  return {
    CONTROLLER_NAME: config().controllerName,
    SERVER_NAME: agent.name.replace(/"/g, '\\"'),
    JETSTREAM_DOMAIN: role === 'leaf' ? agent.name : config().controllerNamespace,
    NATS_SERVER_PORT: String(ports.serverPort),
    NATS_CLUSTER_PORT: String(ports.clusterPort),
    NATS_LEAF_PORT: String(ports.leafPort),
    NATS_MQTT_PORT: String(ports.mqttPort),
    NATS_HTTP_PORT: String(ports.httpPort),
    NATS_LEAF_ADVERTISE: agent.host ?? '',
    NATS_TLS_DIR: NATS_PATHS.tlsDir,
    NATS_CERT_NAME: artefacts.serverCertificate,
    NATS_MQTT_CERT_NAME: artefacts.mqttCertificate,
    NATS_JWT_DIR: NATS_PATHS.jwtDir,
    NATS_JS_MAX_MEMORY_STORE: agent.jsMemoryStoreSize ?? DEFAULT_JETSTREAM_SIZES.jsMemoryStoreSize,
    NATS_JS_MAX_FILE_STORE: agent.jsStorageSize ?? DEFAULT_JETSTREAM_SIZES.jsStorageSize,
  };
}

/** The JetStream encryption key: made once (32 random bytes), sealed, and kept for the agent's life. */
async function ensureJetstreamKey(name: string, agentUuid: string): Promise<string> {
  const existing = await getMount(name);
  if (existing) return (await mountData(existing)).jsk!;
  await putMountIfChanged(name, agentUuid, 'secret', { jsk: randomBytes(32).toString('base64') });
  // A concurrent first reconcile may have won the create: the stored key is the one in use.
  return (await mountData((await getMount(name))!)).jsk!;
}
