import { config } from '../context.js';
import { assignedAddress, DEFAULT_ROUTER, portOwner } from '../domain/placement.js';
import type { ServiceSpec, ServiceView } from '../domain/service.js';
import { type CreateServiceBody, type PatchServiceBody, toServiceSpec } from '../domain/service-schema.js';
import { ContentionError, NotFoundError, ValidationError } from '../errors.js';
import { enqueueServiceReconcile } from '../queue/publishers.js';
import { CONFLICT, retryOnConflict } from '../retry.js';
import {
  claimBridgePort,
  claimNewBridgePort,
  releaseBridgePort,
  returnNewBridgePort,
} from '../store/ports.js';
import { forgetReference, recordReference, referenceTarget, touchTarget } from '../store/references.js';
import { getDefaultRouter } from '../store/routers.js';
import {
  bumpServiceGeneration,
  getServiceRow,
  listServiceRows,
  putNewServiceRow,
  putServiceRowIfAbsent,
  replaceServiceRow,
  type ServiceRow,
  toServiceView,
} from '../store/services.js';
import { resolveServiceResource } from './resolve.js';
import { pageSitesOfService, sitesOfService, summarizeSites } from './service-sites.js';

export type Source = 'json' | 'yaml';
const fieldName = (source: Source, field: string) => (source === 'yaml' ? `spec.${field}` : field);

/** Every service, each with the summary of its sites. */
export async function listServices(): Promise<ServiceView[]> {
  const rows = await listServiceRows();
  const sites = await summarizeSites(rows);
  return rows.map((row) => ({ ...toServiceView(row), sites: sites.get(row.name)! }));
}

/** A service, with the summary of its sites and the first of those that have not applied it. */
export async function getService(name: string): Promise<ServiceView> {
  const row = await requireLiveService(name);
  const { summary, notApplied } = await sitesOfService(row);
  return { ...toServiceView(row), sites: { ...summary, notApplied } };
}

/** Every site of a service, a page at a time. */
export async function listServiceSites(name: string, after: string | undefined, limit: number) {
  return pageSitesOfService(await requireLiveService(name), after, limit);
}

/**
 * Creates a service. The common case (a name never used, or whose tombstone is gone) takes a bridge port
 * while the spec is checked against the store (the default router read beside both), then writes the
 * row with the port in one conditional put and sends the reconcile message: five store and queue calls,
 * four of them one after another (the allocator, the claim, the row, the message). A name with a live
 * row is a 409; one whose deletion is still being cleaned up takes the careful path (row first, over
 * the tombstone, then the port). Each step is idempotent and the worker repeats whatever an interrupted
 * create left out; a port claimed for a row that was never written is released by the sweeper.
 */
export async function createService(body: CreateServiceBody, source: Source): Promise<ServiceView> {
  const spec = toServiceSpec(body);
  const { controlPlane, bridgePorts } = config();
  const readDefaultRouter = startedRead(
    controlPlane === 'remote' || spec.defaultBridge === DEFAULT_ROUTER ? getDefaultRouter : undefined,
  );
  const owner = portOwner({ name: spec.name, incarnation: 1 });
  const [resolved, claimed] = await Promise.allSettled([
    resolveServiceResource(spec, fieldName(source, 'resource'), readDefaultRouter).then(async (found) => {
      // A microservice's service is recorded under it first, so the microservice cannot go while it backs one.
      if (spec.type === 'microservice') await recordBackend({ name: spec.name, resource: found.resource });
      return found;
    }),
    claimNewBridgePort(owner, bridgePorts),
  ]);
  if (resolved.status === 'rejected') {
    if (claimed.status === 'fulfilled') await returnNewBridgePort(claimed.value, owner, bridgePorts);
    throw resolved.reason;
  }
  if (claimed.status === 'rejected') throw claimed.reason;
  const { resource, siteKey, defaultRouter } = resolved.value;
  const hubHost =
    controlPlane === 'remote' ? ((defaultRouter ?? (await readDefaultRouter()))?.host ?? null) : null;
  const now = new Date().toISOString();
  const base: ServiceRow = {
    ...spec,
    resource,
    ...assignedAddress(controlPlane, { ...spec, bridgePort: null, serviceEndpoint: null }, null),
    bridgePort: null,
    provisioningStatus: 'pending',
    provisioningError: null,
    generation: 1,
    observedGeneration: 0,
    incarnation: 1,
    siteKey,
    deleted: false,
    createdAt: now,
    updatedAt: now,
  };
  const stored =
    (await createFreshService(base, claimed.value, hubHost)) ?? (await createOverExistingRow(base, hubHost));
  await enqueueServiceReconcile(
    { name: stored.name, generation: stored.generation },
    'create',
    stored.createdAt,
  );
  if (base.type === 'microservice' && !(await backendStillThere(base))) {
    await deleteService(base.name);
    throw backendGone(base, fieldName(source, 'resource'));
  }
  return toServiceView(stored);
}

/**
 * A read started now and awaited later, at most once (or never: a failure nobody awaits is not an
 * unhandled rejection). Without `read` it answers undefined.
 */
function startedRead<T>(read: (() => Promise<T>) | undefined): () => Promise<T | undefined> {
  if (!read) return async () => undefined;
  const reading = read();
  reading.catch(() => undefined);
  return () => reading;
}

/** A service's reference to the microservice behind it (see store/references.ts). */
const recordBackend = (row: Pick<ServiceRow, 'name' | 'resource'>) =>
  recordReference(referenceTarget.microservice(row.resource), 'backend', row.name);

/** After the row is written: the microservice is touched; false when it was removed meanwhile. */
const backendStillThere = (row: Pick<ServiceRow, 'resource'>) =>
  touchTarget(referenceTarget.microservice(row.resource));

const backendGone = (row: Pick<ServiceRow, 'resource'>, field: string) =>
  new ValidationError(
    `Field '${field}': microservice ${row.resource} was removed while the service was written`,
  );

/** Forgets a service's reference to a microservice it no longer names (its row changed or is gone). */
export function forgetBackend(service: string, microserviceUuid: string): Promise<void> {
  return forgetReference(referenceTarget.microservice(microserviceUuid), 'backend', service);
}

const withPort = (row: ServiceRow, bridgePort: number, hubHost: string | null): ServiceRow => ({
  ...row,
  bridgePort,
  ...assignedAddress(config().controlPlane, { ...row, bridgePort }, hubHost),
});

/**
 * The row with the port claimed for it, written only if the name has no row at all; undefined otherwise
 * (the port handed back). The row is the only record of whose port it is, so a row found holding this
 * very port under this owner is this call's own write (a put retried after its answer was lost).
 */
async function createFreshService(
  base: ServiceRow,
  port: number,
  hubHost: string | null,
): Promise<ServiceRow | undefined> {
  const owner = portOwner(base);
  const row = withPort(base, port, hubHost);
  if (await putServiceRowIfAbsent(row)) return row;
  const existing = await getServiceRow(base.name);
  if (existing && !existing.deleted && portOwner(existing) === owner && existing.bridgePort === port)
    return existing;
  await returnNewBridgePort(port, owner, config().bridgePorts);
  return undefined;
}

/** The careful path: the row over a tombstone (or 409 for a live one), then its port. */
async function createOverExistingRow(base: ServiceRow, hubHost: string | null): Promise<ServiceRow> {
  const row = await putNewServiceRow(base);
  const bridgePort = await claimBridgePort(portOwner(row), config().bridgePorts);
  const assigned = withPort(row, bridgePort, hubHost);
  // A concurrent delete may have won; then the worker sees the tombstone and nothing is half-written.
  return (await replaceServiceRow(assigned, row.generation))
    ? assigned
    : ((await getServiceRow(row.name)) ?? assigned);
}

export function updateServiceFromJson(name: string, body: PatchServiceBody): Promise<void> {
  const { defaultBridgePort, ...patch } = body;
  if (
    defaultBridgePort !== undefined &&
    patch.defaultBridge !== undefined &&
    defaultBridgePort !== patch.defaultBridge
  ) {
    throw new ValidationError(
      `Fields 'defaultBridge' (${JSON.stringify(patch.defaultBridge)}) and 'defaultBridgePort' (${JSON.stringify(defaultBridgePort)}) disagree; send one`,
    );
  }
  patch.defaultBridge ??= defaultBridgePort;
  if (patch.name !== undefined && patch.name !== name) {
    throw new ValidationError(
      `Field 'name' (${JSON.stringify(patch.name)}) does not match the service in the path (${JSON.stringify(name)}); a service cannot be renamed`,
    );
  }
  return updateService(name, patch, 'json');
}

export function updateServiceFromYaml(name: string, body: CreateServiceBody): Promise<void> {
  if (body.name !== name) {
    throw new ValidationError(`Service name in YAML (${body.name}) doesn't match endpoint path (${name})`);
  }
  // A YAML document states the whole service; tags absent from it mean no tags.
  return updateService(name, { ...body, tags: body.tags ?? [] }, 'yaml');
}

/**
 * Partial update: fields absent from the patch keep their stored values; `tags` replaces the list.
 * `type` and `defaultBridge` are immutable. Retried on a concurrent write by re-reading the row.
 */
async function updateService(name: string, patch: PatchServiceBody, source: Source): Promise<void> {
  let moved: { from: string; to: string } | undefined;
  await changeService(name, 'update', async (row) => {
    moved = undefined;
    if (patch.type !== undefined && patch.type !== row.type) {
      throw new ValidationError(
        `Field '${fieldName(source, 'type')}' cannot be changed (stored ${JSON.stringify(row.type)}, got ${JSON.stringify(patch.type)}); delete and recreate the service`,
      );
    }
    if (patch.defaultBridge !== undefined && patch.defaultBridge !== row.defaultBridge) {
      throw new ValidationError(
        `Field '${fieldName(source, 'defaultBridge')}' cannot be changed (stored ${JSON.stringify(row.defaultBridge)}, got ${JSON.stringify(patch.defaultBridge)}); delete and recreate the service`,
      );
    }
    const spec: ServiceSpec = {
      name,
      type: row.type,
      defaultBridge: row.defaultBridge,
      resource: patch.resource ?? row.resource,
      targetPort: patch.targetPort ?? row.targetPort,
      servicePort: patch.servicePort ?? row.servicePort,
      k8sType: patch.k8sType ?? row.k8sType,
      tags: patch.tags ?? row.tags,
    };
    // The connector router is left for reconcile to move, so it can clear the old one first.
    const resource =
      patch.resource !== undefined
        ? (await resolveServiceResource(spec, fieldName(source, 'resource'))).resource
        : row.resource;
    if (row.type === 'microservice' && resource !== row.resource)
      moved = { from: row.resource, to: resource };
    if (moved) await recordBackend({ name, resource });
    return {
      ...spec,
      resource,
      servicePort: assignedAddress(config().controlPlane, { ...row, ...spec }, row.serviceEndpoint)
        .servicePort,
      provisioningStatus: 'pending',
      provisioningError: null,
    };
  });
  if (!moved) return;
  const { from, to } = moved;
  if (await backendStillThere({ resource: to })) {
    await forgetBackend(name, from);
    return;
  }
  // The new microservice went while the row was written: the service keeps the one it had.
  await changeService(name, 'update', (row) => (row.resource === to ? { resource: from } : {}));
  await forgetBackend(name, to);
  throw backendGone({ resource: to }, fieldName(source, 'resource'));
}

/**
 * Deletes a service: the row becomes a tombstone (hidden from the API at once) whose reconcile removes
 * its hub entries, its connector and every agent listener before the row disappears. The bridge port
 * is free as soon as the call returns.
 */
export async function deleteService(name: string): Promise<void> {
  const row = await changeService(name, 'delete', () => ({ deleted: true }));
  if (row.bridgePort !== null) await releaseBridgePort(row.bridgePort, portOwner(row), config().bridgePorts);
}

/** Asks for a fresh reconcile (the retry path for a failed service). */
export async function requestServiceReconcile(name: string): Promise<void> {
  await changeService(name, 'reconcile', () => ({ provisioningStatus: 'pending', provisioningError: null }));
}

/** Bumps the generation of services whose backend changed elsewhere (a moved microservice, a router change). */
export async function requeueServices(rows: ServiceRow[], cause: string): Promise<void> {
  for (const stale of rows) {
    const row = await bumpServiceGeneration(stale.name);
    if (row)
      await enqueueServiceReconcile({ name: row.name, generation: row.generation }, cause, row.createdAt);
  }
}

/**
 * A change to a live service: `change` decides the new fields from the row as it is, the generation
 * grows by one, the write is conditioned on the generation read, and the reconcile is asked for. A
 * concurrent write makes it read and decide again. Returns the row as it was before the change.
 */
async function changeService(
  name: string,
  cause: string,
  change: (row: ServiceRow) => Partial<ServiceRow> | Promise<Partial<ServiceRow>>,
): Promise<ServiceRow> {
  return retryOnConflict(
    async () => {
      const row = await getServiceRow(name);
      if (!row || row.deleted) throw new NotFoundError(`Service with name ${name} not found`);
      const next: ServiceRow = {
        ...row,
        ...(await change(row)),
        generation: row.generation + 1,
        updatedAt: new Date().toISOString(),
      };
      if (!(await replaceServiceRow(next, row.generation))) return CONFLICT;
      await enqueueServiceReconcile({ name, generation: next.generation }, cause, next.createdAt);
      return row;
    },
    {
      times: 5,
      exhausted: () =>
        new ContentionError(`Service ${name} is being changed concurrently; retry the request`),
    },
  );
}

async function requireLiveService(name: string): Promise<ServiceRow> {
  const row = await getServiceRow(name);
  if (!row || row.deleted) throw new NotFoundError(`Service with name ${name} not found`);
  return row;
}
