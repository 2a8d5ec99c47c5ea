import { randomUUID } from 'node:crypto';
import type {
  CreateMicroserviceBody,
  MicroserviceDeclaration,
  NatsConfig,
  PatchMicroserviceBody,
} from '../domain/registry-schema.js';
import { natsConfigAfter } from '../domain/registry-schema.js';
import { show } from '../domain/validation.js';
import { ConflictError, ContentionError, NotFoundError, ValidationError } from '../errors.js';
import { askRouterReconciles } from '../queue/publishers.js';
import { CONFLICT, retryOnConflict } from '../retry.js';
import { getAgentRow } from '../store/agents.js';
import {
  deleteMicroservice as deleteMicroserviceRow,
  getApplication,
  getMicroservice as getMicroserviceRow,
  getMicroserviceUuidByName,
  listMicroservices as listMicroserviceRows,
  listMicroservicesOfApplication,
  type MicroserviceImage,
  type MicroserviceRow,
  putNewMicroservice,
  replaceMicroservice,
} from '../store/applications.js';
import { raiseChangeFlag, raiseChangeFlags } from '../store/changes.js';
import { getImageRegistry } from '../store/image-registries.js';
import { getUserRow } from '../store/nats-accounts.js';
import { referenceTarget, referencingSources } from '../store/references.js';
import { getServiceRow, listServicesByConnectorRouter, type ServiceRow } from '../store/services.js';
import { reconcileApplicationNats } from './nats-applications.js';
import { referenceRule } from './nats-rules.js';
import { findAgent } from './resolve.js';
import { requeueServices } from './services.js';

/** A microservice as the user API (and the Go SDK's `MicroserviceInfo`) shows it. */
export interface MicroserviceView {
  uuid: string;
  name: string;
  application: string;
  iofogUuid: string;
  hostNetworkMode: boolean;
  images: MicroserviceImage[];
  registryId: number;
  config: string;
  natsConfig: { natsAccess: boolean; natsRule: string | null };
}

export const toMicroserviceView = (row: MicroserviceRow): MicroserviceView => ({
  uuid: row.uuid,
  name: row.name,
  application: row.application,
  iofogUuid: row.agentUuid,
  hostNetworkMode: row.hostNetworkMode,
  images: row.images ?? [],
  registryId: row.registryId ?? 1,
  config: row.config ?? '{}',
  natsConfig: { natsAccess: row.natsAccess === true, natsRule: row.natsRule ?? null },
});

/**
 * A microservice's NATS fields after `natsConfig` (absent: unchanged). Access needs its application's
 * (the user lives in the application's account) and its name free of the API users of that account;
 * the user rule is referenced before the row names it, and cleared with the access.
 */
async function natsFields(
  target: { application: string; name: string; uuid: string },
  nats: NatsConfig | undefined,
  existing: MicroserviceRow | undefined,
  field: string,
): Promise<Pick<MicroserviceRow, 'natsAccess' | 'natsRule'>> {
  const after = natsConfigAfter(nats, existing);
  if (nats && after.natsAccess) {
    if (!(await getApplication(target.application))?.natsAccess) {
      throw new ValidationError(
        `Field '${field}.natsAccess': application ${target.application} has no NATS access; turn on the application's natsConfig.natsAccess first`,
      );
    }
    const user = await getUserRow(target.application, target.name);
    if (user && user.kind !== 'microservice') {
      throw new ConflictError(
        `Field '${field}.natsAccess': NATS user ${show(target.name)} of application ${target.application} was made through the API; delete it first (the microservice's user takes its name)`,
      );
    }
  }
  if (nats?.natsRule) await referenceRule('user', nats.natsRule, `ms:${target.uuid}`, `${field}.natsRule`);
  return after;
}

const natsChanged = (before: MicroserviceRow | undefined, after: MicroserviceRow) =>
  (before?.natsAccess ?? false) !== (after.natsAccess ?? false) || before?.natsRule !== after.natsRule;

/** Which field a reference came in, so an error names what the user wrote. */
interface Fields {
  agent: string;
  registryId: string;
  nats: string;
}
const JSON_FIELDS: Fields = { agent: 'agentName', registryId: 'registryId', nats: 'natsConfig' };

async function resolveAgentUuid(reference: string | undefined, field: string): Promise<string> {
  if (reference === undefined)
    throw new ValidationError("Required field 'agentName' or 'iofogUuid' is missing");
  const agent = await findAgent(reference);
  if (!agent) throw new ValidationError(`Field '${field}': agent ${JSON.stringify(reference)} not found`);
  return agent.uuid;
}

/** The agent a JSON body names, by `iofogUuid` or `agentName`; both must then name the same agent. */
async function bodyAgentUuid(body: { iofogUuid?: string; agentName?: string }): Promise<string> {
  const byUuid =
    body.iofogUuid === undefined ? undefined : await resolveAgentUuid(body.iofogUuid, 'iofogUuid');
  const byName =
    body.agentName === undefined ? undefined : await resolveAgentUuid(body.agentName, 'agentName');
  if (byUuid !== undefined && byName !== undefined && byUuid !== byName) {
    throw new ValidationError(
      `Fields 'agentName' (${JSON.stringify(body.agentName)}) and 'iofogUuid' (${JSON.stringify(body.iofogUuid)}) name different agents; send one`,
    );
  }
  const agentUuid = byUuid ?? byName;
  if (agentUuid === undefined)
    throw new ValidationError("Required field 'agentName' or 'iofogUuid' is missing");
  return agentUuid;
}

async function requireRegistry(id: number, field: string): Promise<number> {
  if (!(await getImageRegistry(id))) {
    throw new ValidationError(
      `Field '${field}': registry ${id} not found (GET /api/v3/registries lists them)`,
    );
  }
  return id;
}

async function requireApplication(name: string, field: string): Promise<void> {
  if (!(await getApplication(name))) {
    throw new ValidationError(`Field '${field}': application ${JSON.stringify(name)} not found`);
  }
}

/** Registers a microservice on an agent, with its images, registry, config and NATS access. */
export async function createMicroservice(
  body: CreateMicroserviceBody,
  natsField = JSON_FIELDS.nats,
): Promise<{ uuid: string }> {
  await requireApplication(body.application, 'application');
  const agentUuid = await bodyAgentUuid(body);
  const registryId = await requireRegistry(body.registryId ?? 1, JSON_FIELDS.registryId);
  const now = new Date().toISOString();
  const uuid = body.uuid ?? randomUUID();
  const target = { application: body.application, name: body.name, uuid };
  const nats = await natsFields(target, body.natsConfig, undefined, natsField);
  await putNewMicroservice({
    uuid,
    name: body.name,
    application: body.application,
    agentUuid,
    hostNetworkMode: body.hostNetworkMode ?? false,
    images: body.images ?? [],
    registryId,
    config: body.config ?? '{}',
    ...nats,
    createdAt: now,
    updatedAt: now,
    version: 1,
  });
  // Its user (and creds) before the agent is told of it: its first container starts with them.
  if (nats.natsAccess) await reconcileApplicationNats(body.application, uuid);
  // Its registry's credentials now reach the agent too.
  await raiseChangeFlags(agentUuid, ['microserviceList', 'registries']);
  return { uuid };
}

export async function listMicroservices(application?: string): Promise<MicroserviceView[]> {
  if (application === undefined) return (await listMicroserviceRows()).map(toMicroserviceView);
  if (!(await getApplication(application))) {
    throw new NotFoundError(`Application with name ${application} not found`);
  }
  return (await listMicroservicesOfApplication(application)).map(toMicroserviceView);
}

export async function getMicroservice(uuid: string): Promise<MicroserviceView> {
  return toMicroserviceView(await requireMicroservice(uuid));
}

async function requireMicroservice(uuid: string): Promise<MicroserviceRow> {
  const row = await getMicroserviceRow(uuid);
  if (!row) throw new NotFoundError(`Microservice with uuid ${uuid} not found`);
  return row;
}

/**
 * Moving a microservice to another agent, or switching its host network mode, changes where and how
 * its services' connectors dial: those services are reconciled (the old site loses the connector).
 * New images, registry or config reach the agent through its change flags.
 */
export async function updateMicroservice(uuid: string, patch: PatchMicroserviceBody): Promise<void> {
  if (patch.name !== undefined) {
    throw new ValidationError(
      "Field 'name' cannot be changed: services address the microservice as <application>/<name>",
    );
  }
  const moving = patch.agentName !== undefined || patch.iofogUuid !== undefined;
  const agentUuid = moving ? await bodyAgentUuid(patch) : undefined;
  if (patch.registryId !== undefined) await requireRegistry(patch.registryId, JSON_FIELDS.registryId);
  const field = patch.iofogUuid !== undefined ? 'iofogUuid' : 'agentName';
  const row = await requireMicroservice(uuid);
  const nats = await natsFields(row, patch.natsConfig, row, 'natsConfig');
  await applyMicroserviceChange(uuid, field, (current) => ({
    agentUuid: agentUuid ?? current.agentUuid,
    hostNetworkMode: patch.hostNetworkMode ?? current.hostNetworkMode,
    images: patch.images ?? current.images,
    registryId: patch.registryId ?? current.registryId,
    config: patch.config ?? current.config,
    ...(patch.natsConfig ? nats : {}),
  }));
}

/** Writes a change to a microservice (conditioned on its version) and tells whoever it concerns. */
async function applyMicroserviceChange(
  uuid: string,
  agentField: string,
  change: (row: MicroserviceRow) => Partial<MicroserviceRow>,
): Promise<void> {
  await retryOnConflict(
    async () => {
      const row = await requireMicroservice(uuid);
      const next: MicroserviceRow = { ...row, ...change(row), updatedAt: new Date().toISOString() };
      if (next.agentUuid !== row.agentUuid) await checkBackendMove(row, next.agentUuid, agentField);
      if (!(await replaceMicroservice(next, row))) return CONFLICT;
      if (natsChanged(row, next)) await reconcileApplicationNats(next.application, next.uuid);
      await announceMicroserviceChange(row, next);
    },
    {
      times: 5,
      exhausted: () =>
        new ContentionError(`Microservice ${uuid} is being changed concurrently; retry the request`),
    },
  );
}

async function announceMicroserviceChange(row: MicroserviceRow, next: MicroserviceRow): Promise<void> {
  const moved = next.agentUuid !== row.agentUuid;
  const runsDifferently =
    JSON.stringify(next.images) !== JSON.stringify(row.images) || next.registryId !== row.registryId;
  if (moved) {
    await raiseChangeFlags(row.agentUuid, ['microserviceList', 'registries']);
    await raiseChangeFlags(next.agentUuid, ['microserviceList', 'registries']);
  } else if (runsDifferently) {
    await raiseChangeFlags(row.agentUuid, ['microserviceList', 'registries']);
  }
  if (!moved && (next.hostNetworkMode !== row.hostNetworkMode || next.config !== row.config)) {
    await raiseChangeFlag(row.agentUuid, 'microserviceConfig');
  }
  if (moved && next.natsAccess) {
    // Its creds mount moves with it, and each agent's leaf links into the account may change.
    await raiseChangeFlags(row.agentUuid, ['volumeMounts']);
    await raiseChangeFlags(next.agentUuid, ['volumeMounts']);
    await askRouterReconciles([row.agentUuid, next.agentUuid]);
  }
  if (moved || next.hostNetworkMode !== row.hostNetworkMode) {
    const affected = (await listServicesByConnectorRouter(row.agentUuid)).filter(
      (service) => service.type === 'microservice' && service.resource === row.uuid,
    );
    await requeueServices(affected, `microservice-${row.version + 1}`);
  }
}

/**
 * The services a microservice backs: those recorded under it (store/references.ts), as their rows say
 * now. A service whose backend failed (it has no connector router then) still counts.
 */
export async function servicesBackedBy(row: MicroserviceRow): Promise<ServiceRow[]> {
  const names = await referencingSources(referenceTarget.microservice(row.uuid), 'backend');
  const rows = await Promise.all(names.map((name) => getServiceRow(name)));
  return rows.filter(
    (service): service is ServiceRow =>
      !!service && !service.deleted && service.type === 'microservice' && service.resource === row.uuid,
  );
}

/** A microservice that backs services moves only to an agent with a router (its connector router). */
async function checkBackendMove(row: MicroserviceRow, agentUuid: string, field: string): Promise<void> {
  const agent = await getAgentRow(agentUuid);
  if (agent?.routerMode !== 'none') return;
  const users = await servicesBackedBy(row);
  if (users.length === 0) return;
  throw new ValidationError(
    `Field '${field}': agent ${agent.name} has router mode none, and microservice ${row.application}/${row.name} backs services ${users.map((s) => s.name).join(', ')}, whose connector needs a router on its agent`,
  );
}

/** Refuses to remove a microservice that backs services. */
export async function checkMicroserviceRemovable(row: MicroserviceRow): Promise<void> {
  const users = await servicesBackedBy(row);
  if (users.length > 0) {
    throw new ConflictError(
      `Microservice ${row.application}/${row.name} backs services ${users.map((s) => s.name).join(', ')}; delete them first`,
    );
  }
}

/**
 * Removes a microservice that backs no service, checked against the row as read and written
 * conditioned on it: a service that started to reference it meanwhile makes it read and check again.
 * Its NATS user is revoked after (unless `nats: false`: the caller reconciles the whole account).
 */
export async function removeMicroservice(
  first: MicroserviceRow,
  options: { nats?: boolean } = {},
): Promise<void> {
  await retryOnConflict(
    async (attempt) => {
      const row = attempt === 0 ? first : await getMicroserviceRow(first.uuid);
      if (!row) return;
      await checkMicroserviceRemovable(row);
      if (!(await deleteMicroserviceRow(row))) return CONFLICT;
      await raiseChangeFlag(row.agentUuid, 'microserviceList');
      if (row.natsAccess && options.nats !== false) {
        await reconcileApplicationNats(row.application, row.uuid);
        // Its agent may serve the application no more: a leaf then drops its link into the account.
        await askRouterReconciles([row.agentUuid]);
      }
    },
    {
      times: 5,
      exhausted: () =>
        new ContentionError(`Microservice ${first.uuid} is being changed concurrently; retry the request`),
    },
  );
}

export async function deleteMicroservice(uuid: string): Promise<void> {
  await removeMicroservice(await requireMicroservice(uuid));
}

/** YAML fields are named as the document has them. */
const yamlFields = (prefix: string): Fields => ({
  agent: `${prefix}agent.name`,
  registryId: `${prefix}images.registry`,
  nats: `${prefix}natsConfig`,
});

/**
 * What a declaration resolves to before anything is written: its agent and registry exist, and a
 * microservice of that name in `application` that backs services does not move to an agent without a
 * router.
 */
export async function resolveDeclaration(
  declaration: Omit<MicroserviceDeclaration, 'application'>,
  fields: Fields,
  application?: string,
): Promise<{ agentUuid: string; registryId: number }> {
  const resolved = {
    agentUuid: await resolveAgentUuid(declaration.agentName, fields.agent),
    registryId: await requireRegistry(declaration.registryId, fields.registryId),
  };
  const existing = application && (await getMicroserviceUuidByName(application, declaration.name));
  const row = existing ? await getMicroserviceRow(existing) : undefined;
  if (row && row.agentUuid !== resolved.agentUuid)
    await checkBackendMove(row, resolved.agentUuid, fields.agent);
  return resolved;
}

/**
 * Creates or updates a microservice from its declaration (a `kind: Microservice` or one of an
 * Application's microservices): matched by application and name.
 */
export async function applyMicroserviceDeclaration(
  declaration: MicroserviceDeclaration,
  fields: Fields = yamlFields('spec.'),
): Promise<{ uuid: string; created: boolean }> {
  const { agentUuid, registryId } = await resolveDeclaration(declaration, fields);
  const existing = await getMicroserviceUuidByName(declaration.application, declaration.name);
  const runtime = {
    images: declaration.images,
    registryId,
    config: declaration.config ?? '{}',
    hostNetworkMode: declaration.hostNetworkMode,
  };
  if (existing) {
    const row = await requireMicroservice(existing);
    const nats = await natsFields(row, declaration.natsConfig, row, fields.nats);
    await applyMicroserviceChange(existing, fields.agent, () => ({ ...runtime, ...nats, agentUuid }));
    return { uuid: existing, created: false };
  }
  const { uuid } = await createMicroservice(
    {
      name: declaration.name,
      application: declaration.application,
      iofogUuid: agentUuid,
      ...runtime,
      ...(declaration.natsConfig ? { natsConfig: declaration.natsConfig } : {}),
    },
    fields.nats,
  );
  return { uuid, created: true };
}

/** POST /api/v3/microservices/yaml. */
export async function createMicroserviceFromYaml(
  declaration: MicroserviceDeclaration,
): Promise<{ uuid: string }> {
  await requireApplication(declaration.application, 'spec.application');
  if (await getMicroserviceUuidByName(declaration.application, declaration.name)) {
    throw new ConflictError(
      `Microservice with name ${declaration.name} already exists in application ${declaration.application}`,
    );
  }
  const { uuid } = await applyMicroserviceDeclaration(declaration);
  return { uuid };
}

/** PATCH /api/v3/microservices/yaml/{uuid}: the document must name that microservice. */
export async function updateMicroserviceFromYaml(
  uuid: string,
  declaration: MicroserviceDeclaration,
): Promise<void> {
  const row = await requireMicroservice(uuid);
  if (row.application !== declaration.application || row.name !== declaration.name) {
    throw new ValidationError(
      `Microservice in YAML (${declaration.application}/${declaration.name}) doesn't match endpoint path (${row.application}/${row.name})`,
    );
  }
  await applyMicroserviceDeclaration(declaration);
}
