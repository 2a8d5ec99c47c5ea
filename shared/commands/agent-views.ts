import { config } from '../context.js';
import { nearMissDistributionTags } from '../domain/distribution.js';
import { DEFAULT_JETSTREAM_SIZES, natsPortsOf } from '../domain/nats-conf.js';
import { routerMicroserviceUuid } from '../domain/placement.js';
import { NotFoundError } from '../errors.js';
import { type AgentStatusRow, getAgentStatus, getAgentStatuses } from '../store/agent-reports.js';
import { type AgentRow, getAgentRow, listAgentRows } from '../store/agents.js';
import { changeStateOf } from '../store/changes.js';
import { getProvisionedArchitecture } from '../store/credentials.js';
import { getRequestRecords, platformStatusOf } from '../store/platform.js';

/** The read model of agents: how the API shows an agent, its last report and its router. */

/** The row's fields the API shows as they are stored. */
type StoredAgentFields = Pick<
  AgentRow,
  | 'uuid'
  | 'name'
  | 'host'
  | 'tags'
  | 'routerMode'
  | 'messagingPort'
  | 'interRouterPort'
  | 'edgeRouterPort'
  | 'upstreamRouters'
  | 'isSystem'
  | 'natsMode'
>;

export interface AgentView extends AgentHealth, StoredAgentFields {
  natsServerPort: number;
  natsClusterPort: number;
  natsLeafPort: number;
  natsMqttPort: number;
  natsHttpPort: number;
  jsStorageSize: string;
  jsMemoryStoreSize: string;
  upstreamNatsServers: string[];
  /** The architecture: reported at provisioning, else declared (0 unknown, 1 amd64, 2 arm64, 3 riscv64, 4 arm). */
  fogTypeId: number;
  /** How far its router fabric (CAs, certificates, its router's own part) is provisioned, and what it waits for. */
  platformStatus: { phase: 'pending' | 'ready'; message: string | null };
  /**
   * Where its router stands (null without one): the change counter value of the last change to its
   * router config, the value the agent acknowledged, whether a change its running router reads only at
   * start waits for a rebuild, and when the agent was last heard from. On an agent's own read.
   */
  router?: {
    configVersion: number;
    acknowledgedVersion: number;
    rebuildPending: boolean;
    lastSeen: string | null;
  } | null;
  /** Present when a tag looks like a distribution tag but selects nothing. */
  warnings?: string[];
}

/**
 * What the agent last reported with PUT /agent/status, in the reference's field names and the types the
 * Go SDK decodes (integers where it reads int64), and its router's health from the same report.
 */
export interface AgentHealth {
  /** When the last status arrived (epoch ms); null before the first. */
  lastActive: number | null;
  daemonStatus: string;
  daemonOperatingDuration: number | null;
  lastStatusTime: number | null;
  ipAddress: string;
  ipAddressExternal: string;
  version: string;
  memoryUsage: number | null;
  diskUsage: number | null;
  cpuUsage: number | null;
  warningMessage: string;
  /** The router microservice as the agent reports it (`microserviceStatus`), or null. */
  routerStatus: { status: string; healthStatus: string } | null;
}

const text = (value: unknown): string => (typeof value === 'string' ? value : '');
const integer = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) ? Math.round(value) : null;
const decimal = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) ? value : null;

/** The router's entry in Edgelet's `microserviceStatus` (a JSON string of an array). */
function routerHealth(report: Record<string, unknown>, agentUuid: string): AgentHealth['routerStatus'] {
  if (typeof report.microserviceStatus !== 'string') return null;
  try {
    const entries: unknown = JSON.parse(report.microserviceStatus);
    if (!Array.isArray(entries)) return null;
    const router = entries.find(
      (entry): entry is Record<string, unknown> =>
        !!entry &&
        typeof entry === 'object' &&
        (entry as { id?: unknown }).id === routerMicroserviceUuid(agentUuid),
    );
    return router ? { status: text(router.status), healthStatus: text(router.healthStatus) } : null;
  } catch {
    return null;
  }
}

export function toAgentHealth(agentUuid: string, status: AgentStatusRow | undefined): AgentHealth {
  const report = status?.status ?? {};
  return {
    lastActive: status?.lastActive ?? null,
    daemonStatus: text(report.daemonStatus) || (status ? '' : 'UNKNOWN'),
    daemonOperatingDuration: integer(report.daemonOperatingDuration),
    lastStatusTime: integer(report.lastStatusTime),
    ipAddress: text(report.ipAddress),
    ipAddressExternal: text(report.ipAddressExternal),
    version: text(report.version),
    memoryUsage: decimal(report.memoryUsage),
    diskUsage: decimal(report.diskUsage),
    cpuUsage: decimal(report.cpuUsage),
    warningMessage: text(report.warningMessage),
    routerStatus: routerHealth(report, agentUuid),
  };
}

export function toAgentView(
  row: AgentRow,
  status?: AgentStatusRow,
  architecture?: number,
  requests?: Record<string, unknown>,
  options: { router?: boolean } = {},
): AgentView {
  const platform = platformStatusOf(requests);
  const changes = changeStateOf(requests);
  const view: AgentView = {
    uuid: row.uuid,
    name: row.name,
    host: row.host,
    tags: row.tags,
    routerMode: row.routerMode,
    messagingPort: row.messagingPort,
    interRouterPort: row.interRouterPort,
    edgeRouterPort: row.edgeRouterPort,
    upstreamRouters: row.upstreamRouters,
    isSystem: row.isSystem,
    natsMode: row.natsMode,
    ...natsView(row),
    fogTypeId: architecture ?? row.fogTypeId ?? 0,
    // Until the first fog reconcile has run, the fabric is on its way.
    platformStatus: { phase: platform?.phase ?? 'pending', message: platform?.message ?? null },
    ...(options.router
      ? {
          router:
            row.routerMode === 'none'
              ? null
              : {
                  configVersion: changes.configChanged,
                  acknowledgedVersion: changes.acknowledged,
                  rebuildPending: changes.rebuildRouter,
                  lastSeen: status ? new Date(status.lastActive).toISOString() : null,
                },
        }
      : {}),
    ...toAgentHealth(row.uuid, status),
  };
  const warnings = tagWarnings(row.tags);
  if (warnings.length > 0) view.warnings = warnings;
  return view;
}

function natsView(row: AgentRow) {
  const ports = natsPortsOf(row);
  return {
    natsServerPort: ports.serverPort,
    natsClusterPort: ports.clusterPort,
    natsLeafPort: ports.leafPort,
    natsMqttPort: ports.mqttPort,
    natsHttpPort: ports.httpPort,
    jsStorageSize: row.jsStorageSize ?? DEFAULT_JETSTREAM_SIZES.jsStorageSize,
    jsMemoryStoreSize: row.jsMemoryStoreSize ?? DEFAULT_JETSTREAM_SIZES.jsMemoryStoreSize,
    upstreamNatsServers: row.upstreamNatsServers ?? [],
  };
}

export function tagWarnings(tags: string[]): string[] {
  const prefix = config().serviceAnnotationTag;
  return nearMissDistributionTags(tags, prefix).map(
    (tag) =>
      `Tag ${JSON.stringify(tag)} selects no services: a distribution tag is written "${prefix}: <token>" with one space after the colon`,
  );
}

export async function listAgents(): Promise<AgentView[]> {
  const rows = await listAgentRows();
  const uuids = rows.map((row) => row.uuid);
  const [statuses, requests] = await Promise.all([getAgentStatuses(uuids), getRequestRecords(uuids)]);
  return rows.map((row) => toAgentView(row, statuses.get(row.uuid), undefined, requests.get(row.uuid)));
}

export async function getAgent(uuid: string): Promise<AgentView> {
  const row = await requireAgent(uuid);
  const [status, architecture, requests] = await Promise.all([
    getAgentStatus(uuid),
    getProvisionedArchitecture(uuid),
    getRequestRecords([uuid]),
  ]);
  return toAgentView(row, status, architecture, requests.get(uuid), { router: true });
}

export async function requireAgent(uuid: string): Promise<AgentRow> {
  const row = await getAgentRow(uuid);
  if (!row) throw new NotFoundError(`Agent with uuid ${uuid} not found`);
  return row;
}
