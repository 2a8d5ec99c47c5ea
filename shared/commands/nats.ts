import { config } from '../context.js';
import { DEFAULT_NATS_PORTS, normalizeStoreSize } from '../domain/nats-conf.js';
import type { PutNatsHubBody } from '../domain/nats-schema.js';
import { portSetProblem } from '../domain/port-set.js';
import { ForbiddenError, NotFoundError, ValidationError } from '../errors.js';
import { askNatsHubReconcile, askRouterReconciles } from '../queue/publishers.js';
import { listAgentRows } from '../store/agents.js';
import { getNatsHub, type NatsHubRow, putNatsHub } from '../store/nats.js';
import {
  credsOf,
  ensureNatsOperator,
  ensureSystemAccount,
  ensureSystemUser,
} from '../store/nats-identities.js';

export interface NatsHubView {
  host: string;
  serverPort: number;
  clusterPort: number;
  leafPort: number;
  mqttPort: number;
  httpPort: number;
}

const toView = (row: NatsHubRow): NatsHubView => ({
  host: row.host,
  serverPort: row.serverPort,
  clusterPort: row.clusterPort,
  leafPort: row.leafPort,
  mqttPort: row.mqttPort,
  httpPort: row.httpPort,
});

export async function getNatsHubView(): Promise<NatsHubView> {
  const row = await getNatsHub();
  if (!row) throw new NotFoundError('NATS hub not found: register it with PUT /api/v3/nats/hub');
  return toView(row);
}

/**
 * Registers or updates the NATS hub (the operator calls it with the `nats` Service's
 * address). On a remote control plane the hub stays the system agent's server and keeps pointing at it.
 * A new or moved hub re-renders every agent's NATS process (leaves dial it, Kubernetes servers route to it).
 */
export async function putNatsHubFromBody(body: PutNatsHubBody): Promise<NatsHubView> {
  const existing = await getNatsHub();
  const row: NatsHubRow = {
    host: body.host,
    serverPort: body.serverPort ?? DEFAULT_NATS_PORTS.serverPort,
    clusterPort: body.clusterPort ?? DEFAULT_NATS_PORTS.clusterPort,
    leafPort: body.leafPort ?? DEFAULT_NATS_PORTS.leafPort,
    mqttPort: body.mqttPort ?? DEFAULT_NATS_PORTS.mqttPort,
    httpPort: body.httpPort ?? DEFAULT_NATS_PORTS.httpPort,
    jsStorageSize: body.jsStorageSize ? normalizeStoreSize(body.jsStorageSize) : null,
    jsMemoryStoreSize: body.jsMemoryStoreSize ? normalizeStoreSize(body.jsMemoryStoreSize) : null,
    agentUuid: existing?.agentUuid ?? null,
    updatedAt: new Date().toISOString(),
  };
  const problem = portSetProblem(
    (['serverPort', 'clusterPort', 'leafPort', 'mqttPort', 'httpPort'] as const).map((field) => ({
      field,
      port: row[field],
    })),
  );
  if (problem) throw new ValidationError(problem);
  await putNatsHub(row);
  const moved =
    !existing ||
    existing.host !== row.host ||
    (Object.keys(DEFAULT_NATS_PORTS) as (keyof typeof DEFAULT_NATS_PORTS)[]).some(
      (port) => existing[port] !== row[port],
    );
  if (moved) {
    const natsAgents = (await listAgentRows())
      .filter((agent) => agent.natsMode !== 'none')
      .map((agent) => agent.uuid);
    await askRouterReconciles(natsAgents);
  }
  return toView(row);
}

export interface NatsBootstrap {
  operatorJwt: string;
  operatorPublicKey: string;
  operatorSeed: string;
  systemAccountJwt: string;
  systemAccountPublicKey: string;
  sysUserCredsBase64: string;
}

/**
 * GET /api/v3/nats/bootstrap (Kubernetes only): the operator, the system account and the hub's
 * system user `admin-hub`, made once and the same on every call. The operator stores them in its
 * Secrets; the JWT bundle ConfigMap is (re)checked right after.
 */
export async function natsBootstrap(): Promise<NatsBootstrap> {
  if (config().controlPlane !== 'kubernetes') {
    throw new ForbiddenError(
      'NATS bootstrap is only available when the Controller runs on the Kubernetes control plane',
    );
  }
  const operator = await ensureNatsOperator();
  const account = await ensureSystemAccount();
  const user = await ensureSystemUser('admin-hub', ['STANDARD', 'WEBSOCKET']);
  await askNatsHubReconcile();
  return {
    operatorJwt: operator.jwt,
    operatorPublicKey: operator.publicKey,
    operatorSeed: operator.seed,
    systemAccountJwt: account.jwt,
    systemAccountPublicKey: account.publicKey,
    sysUserCredsBase64: Buffer.from(credsOf(user), 'utf8').toString('base64'),
  };
}
