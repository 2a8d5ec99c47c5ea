import { config } from '../context.js';
import type {
  AcknowledgementBody,
  AgentDocument,
  ControllerRegisterBody,
} from '../domain/agent-protocol-schema.js';
import { MICROSERVICE_CREDS_DIR } from '../domain/nats-accounts.js';
import { hubRouterKey, natsMicroserviceUuid, routerMicroserviceUuid } from '../domain/placement.js';
import { incompleteRouterConfig, routerContainer } from '../domain/router-microservice.js';
import { routerCertificateSpecs } from '../domain/router-site.js';
import { ForbiddenError, NotFoundError, ValidationError } from '../errors.js';
import { logger } from '../log/logger.js';
import { askRouterReconciles } from '../queue/publishers.js';
import { getAgentConfig, putAgentConfig, putAgentStatus } from '../store/agent-reports.js';
import { type AgentRow, getAgentRow } from '../store/agents.js';
import { getMicroservice, listMicroservicesByAgent, type MicroserviceRow } from '../store/applications.js';
import {
  acknowledge,
  type ChangeFlag,
  type ChangeState,
  raiseChangeFlag,
  raiseChangeFlags,
  readChangeFlags,
} from '../store/changes.js';
import { getProvisionedArchitecture } from '../store/credentials.js';
import { type ImageRegistryRow, listImageRegistries } from '../store/image-registries.js';
import { getMount, mountData } from '../store/mounts.js';
import { getNatsInstance } from '../store/nats.js';
import { clearAppliedSites } from '../store/pending-sites.js';
import { listRolloutHolds } from '../store/rollout-holds.js';
import { getDefaultRouter, readRouterConfig } from '../store/routers.js';
import {
  type ControllerMicroserviceRow,
  getControllerMicroservice,
  putControllerMicroservice,
} from '../store/system-microservices.js';
import { heldCertificates, microserviceCreds } from './volume-mounts.js';

/**
 * The agent side of the protocol, as Edgelet speaks it: every answer is a JSON
 * object (or nothing), flags are booleans, `lastUpdated` is a string, ports are numbers, `config` and
 * `registryId` have the types Edgelet asserts.
 */

/** What GET /api/v3/agent/config/changes answers: every reference flag, and the counter as a string. */
export async function getAgentChanges(
  agentUuid: string,
): Promise<Record<ChangeFlag, boolean> & { lastUpdated: string }> {
  const { flags, lastUpdated } = await readChangeFlags(agentUuid);
  return { ...flags, lastUpdated: String(lastUpdated) };
}

export async function acknowledgeAgentChanges(
  agentUuid: string,
  { lastUpdated }: AcknowledgementBody,
): Promise<void> {
  const acknowledged = await acknowledge(agentUuid, lastUpdated);
  if (acknowledged === 'ahead') {
    throw new ValidationError(
      `Field 'lastUpdated' is ahead of the changes this agent was shown, got ${JSON.stringify(String(lastUpdated))}`,
    );
  }
  // Edgelet acknowledges on every tick; only a new acknowledgement can have applied something.
  if (acknowledged !== 'moved') return;
  await clearAppliedSites(agentUuid, lastUpdated);
  // Routers that dial this agent and hold their rebuild until it has its side may go on now.
  const held = await listRolloutHolds(agentUuid);
  if (held.length > 0) await askRouterReconciles(held.map((hold) => hold.dialer));
}

/** PUT /agent/status: kept as the agent sent it, with the time it arrived (its "last seen"). */
export async function reportAgentStatus(agentUuid: string, status: AgentDocument): Promise<void> {
  await putAgentStatus(agentUuid, { status, lastActive: Date.now() });
}

/** GET /agent/config: the settings the agent last sent (Edgelet applies the keys it knows). */
export async function readAgentConfig(agentUuid: string): Promise<Record<string, unknown>> {
  return (await getAgentConfig(agentUuid))?.config ?? {};
}

export async function storeAgentConfig(agentUuid: string, settings: AgentDocument): Promise<void> {
  await putAgentConfig(agentUuid, settings);
}

/**
 * GET /agent/registries: every registry (so each id an item names resolves), with credentials only for
 * the registries the agent's own microservices pull from. A node holds no password it does not use:
 * one compromised agent does not hand over every registry account of the fleet.
 */
export async function listAgentRegistries(agentUuid: string): Promise<ImageRegistryRow[]> {
  const [registries, microservices, controller] = await Promise.all([
    listImageRegistries(),
    listMicroservicesByAgent(agentUuid),
    getControllerMicroservice(agentUuid),
  ]);
  const used = new Set([
    ...microservices.map((microservice) => microservice.registryId ?? 1),
    ...(controller ? [controller.registryId] : []),
  ]);
  return registries.map(({ createdAt: _createdAt, ...registry }) =>
    used.has(registry.id) ? registry : { ...registry, username: '', password: '', userEmail: '' },
  );
}

/** A port an Edgelet publishes for a container: numbers, as Edgelet reads them. */
export interface PortMapping {
  internal: number;
  external: number;
  protocol: 'tcp' | 'udp';
}

/** A microservice as an Edgelet receives it; `config` is a JSON string. */
export interface AgentMicroservice {
  uuid: string;
  name: string;
  application: string;
  imageId: string;
  registryId: number;
  config: string;
  rebuild: boolean;
  hostNetworkMode: boolean;
  isPrivileged: boolean;
  portMappings: PortMapping[];
  volumeMappings: unknown[];
  env: { key: string; value: string }[];
  capAdd: string[];
  isRouter: boolean;
  isNats: boolean;
  /** Set on the Controller microservice a system agent registered. */
  isController?: boolean;
}

/**
 * The agent's microservices: its router (when it has one) and the registered ones that have an image
 * for its architecture (the reference skips the others, and so does Edgelet).
 */
export async function listAgentMicroservices(agentUuid: string): Promise<AgentMicroservice[]> {
  const agent = await getAgentRow(agentUuid);
  if (!agent) throw new NotFoundError(`Agent with uuid ${agentUuid} not found`);
  const changes = readChangeFlags(agentUuid);
  const [architecture, registered, router, nats, controller] = await Promise.all([
    agentArchitecture(agent),
    listMicroservicesByAgent(agentUuid),
    routerMicroservice(agent, changes),
    natsMicroservice(agent, changes),
    agent.isSystem ? getControllerMicroservice(agentUuid) : undefined,
  ]);
  const creds = await microserviceCreds(registered);
  const runnable = registered.flatMap((row) => {
    const image = (row.images ?? []).find((candidate) => candidate.fogTypeId === architecture);
    return image ? [registeredMicroservice(row, image.containerImage, creds.get(row.uuid)?.mount)] : [];
  });
  const system = [router, nats, controller && controllerMicroservice(agent, controller, architecture)];
  return [...system.filter((item): item is AgentMicroservice => item !== undefined), ...runnable];
}

export async function getAgentMicroservice(agentUuid: string, uuid: string): Promise<AgentMicroservice> {
  const found = (await listAgentMicroservices(agentUuid)).find((microservice) => microservice.uuid === uuid);
  // Another agent's microservice is as invisible as a missing one.
  if (!found) throw new NotFoundError(`Microservice with uuid ${uuid} not found`);
  return found;
}

/** The architecture the agent reported when it provisioned, else the one it was declared with. */
async function agentArchitecture(agent: AgentRow): Promise<number> {
  return (await getProvisionedArchitecture(agent.uuid)) ?? agent.fogTypeId ?? 0;
}

/**
 * A registered microservice. With NATS access (and its user made) its creds file is mounted at
 * /etc/nats/creds and its path is in `NATS_CREDS_PATH`, as the reference controller delivers them.
 */
function registeredMicroservice(
  row: MicroserviceRow,
  imageId: string,
  creds?: { name: string; path: string },
): AgentMicroservice {
  return {
    uuid: row.uuid,
    name: row.name,
    application: row.application,
    imageId,
    registryId: row.registryId ?? 1,
    config: row.config ?? '{}',
    rebuild: false,
    hostNetworkMode: row.hostNetworkMode,
    isPrivileged: false,
    portMappings: [],
    volumeMappings: creds
      ? [
          {
            hostDestination: creds.name,
            containerDestination: MICROSERVICE_CREDS_DIR,
            accessMode: 'ro',
            type: 'volumeMount',
          },
        ]
      : [],
    env: creds ? [{ key: 'NATS_CREDS_PATH', value: creds.path }] : [],
    capAdd: [],
    isRouter: false,
    isNats: false,
  };
}

/**
 * The router system microservice: the configured router image, the environment the Router container
 * reads, NET_RAW, and its config (the JSON string of the router config fogbridge manages). An interior
 * router runs on the host network, so its inter-router and edge ports bind on the node and the
 * connectors it holds reach local processes at 127.0.0.1.
 *
 * It is listed only once its config is one a Router can run (`incompleteRouterConfig`): Edgelet starts
 * the container from the first config it gets, and a running router takes nothing but `bridges` from a
 * later one. Until then the agent runs no router; the reconcile that completes the config tells it
 * (`microserviceConfig` makes Edgelet fetch the whole list). `rebuild` holds from the write that changed
 * what the router reads only at start until the agent acknowledges it.
 */
async function routerMicroservice(
  agent: AgentRow,
  changes: Promise<ChangeState>,
): Promise<AgentMicroservice | undefined> {
  if (agent.routerMode === 'none') return undefined;
  const routerMode = agent.routerMode;
  const [routerConfig, certificates] = await Promise.all([
    (async () =>
      readRouterConfig(agent.uuid, hubRouterKey(await getDefaultRouter()) === agent.uuid, agent))(),
    heldCertificates(agent),
  ]);
  const held = certificates.map((certificate) => certificate.name);
  const needed = routerCertificateSpecs(agent).map((spec) => spec.name);
  const incomplete = incompleteRouterConfig(
    routerConfig,
    { uuid: agent.uuid, routerMode },
    new Set(held),
    needed,
  );
  if (incomplete) {
    logger.debug('router not listed yet', { agentUuid: agent.uuid, reason: incomplete });
    return undefined;
  }
  const container = routerContainer({ ...agent, routerMode }, held, config().router);
  return {
    uuid: routerMicroserviceUuid(agent.uuid),
    name: 'router',
    application: `system-${agent.name}`,
    ...container,
    config: JSON.stringify(routerConfig),
    rebuild: (await changes).rebuildRouter,
    isPrivileged: false,
    isRouter: true,
    isNats: false,
  };
}

/**
 * The NATS system microservice as the agent's last fog reconcile made it, with
 * its JetStream key from the sealed mount. Not on the host network; `rebuild` holds from the
 * reconcile that changed its files until the agent acknowledges that change.
 */
async function natsMicroservice(
  agent: AgentRow,
  changeState: Promise<ChangeState>,
): Promise<AgentMicroservice | undefined> {
  if (agent.natsMode === 'none') return undefined;
  const [instance, changes] = await Promise.all([getNatsInstance(agent.uuid), changeState]);
  if (!instance) return undefined;
  const keyMount = await getMount(instance.microservice.jetstreamKeyMount);
  const jetstreamKey = keyMount ? (await mountData(keyMount)).jsk : undefined;
  const spec = instance.microservice;
  return {
    uuid: natsMicroserviceUuid(agent.uuid),
    name: 'nats',
    application: spec.application,
    imageId: spec.imageId,
    registryId: spec.registryId,
    config: '{}',
    rebuild: changes.rebuildNats || instance.rebuildSeq > changes.acknowledged,
    hostNetworkMode: false,
    isPrivileged: false,
    portMappings: spec.ports.map((port) => ({ internal: port, external: port, protocol: 'tcp' })),
    volumeMappings: spec.volumeMappings,
    env: [...(jetstreamKey ? [{ key: 'JETSTREAM_KEY', value: jetstreamKey }] : []), ...spec.env],
    capAdd: ['NET_RAW'],
    isRouter: false,
    isNats: true,
  };
}

/** The Controller microservice as its Edgelet registered it: the image for the agent's architecture. */
function controllerMicroservice(
  agent: AgentRow,
  row: ControllerMicroserviceRow,
  architecture: number,
): AgentMicroservice {
  const image = row.images.find((candidate) => candidate.archId === architecture) ?? row.images[0]!;
  return {
    uuid: row.uuid,
    name: 'controller',
    application: `system-${agent.name}`,
    imageId: image.containerImage,
    registryId: row.registryId,
    config: row.config ?? '{}',
    rebuild: false,
    hostNetworkMode: row.hostNetworkMode ?? false,
    isPrivileged: false,
    portMappings: (row.ports ?? []).map((port) => ({
      internal: port.internal,
      external: port.external,
      protocol: port.protocol ?? 'tcp',
    })),
    volumeMappings: row.volumeMappings ?? [],
    env: row.env ?? [],
    capAdd: row.capAdd ?? [],
    isRouter: false,
    isNats: false,
    isController: true,
  };
}

/**
 * POST /api/v3/agent/controller/register: only a system agent may register the Controller
 * container it runs; the same uuid later updates the record. A uuid that names another microservice is
 * refused. The agent is told (`microserviceList`, and `microserviceConfig` on an update).
 */
export async function registerController(
  agentUuid: string,
  body: ControllerRegisterBody,
): Promise<{ uuid: string }> {
  const agent = await getAgentRow(agentUuid);
  if (!agent) throw new NotFoundError(`Agent with uuid ${agentUuid} not found`);
  if (!agent.isSystem) throw new ForbiddenError('Controller register is only available on system fogs');
  if (await getMicroservice(body.uuid)) {
    throw new ValidationError(
      `Field 'uuid': ${JSON.stringify(body.uuid)} is the uuid of a registered microservice`,
    );
  }
  const existing = await getControllerMicroservice(agentUuid);
  if (existing && existing.uuid !== body.uuid) {
    throw new ValidationError(
      `Field 'uuid': this agent's Controller is registered as ${JSON.stringify(existing.uuid)}, got ${JSON.stringify(body.uuid)}`,
    );
  }
  const now = new Date().toISOString();
  await putControllerMicroservice({
    ...body,
    agentUuid,
    createdAt: existing?.createdAt ?? now,
    updatedAt: now,
  });
  await raiseChangeFlags(agentUuid, ['microserviceList', 'registries']);
  if (existing) await raiseChangeFlag(agentUuid, 'microserviceConfig');
  return { uuid: body.uuid };
}
