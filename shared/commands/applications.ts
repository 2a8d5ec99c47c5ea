import type {
  ApplicationDeclaration,
  CreateApplicationBody,
  NatsConfig,
  PatchApplicationBody,
} from '../domain/registry-schema.js';
import { natsConfigAfter } from '../domain/registry-schema.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { askRouterReconciles } from '../queue/publishers.js';
import {
  type ApplicationRow,
  deleteApplicationRow,
  getApplication,
  listApplications as listApplicationRows,
  listMicroservicesOfApplication,
  putApplication,
  putNewApplication,
} from '../store/applications.js';
import {
  applyMicroserviceDeclaration,
  checkMicroserviceRemovable,
  type MicroserviceView,
  removeMicroservice,
  resolveDeclaration,
  toMicroserviceView,
} from './microservices.js';
import { reconcileApplicationNats } from './nats-applications.js';
import { referenceRule } from './nats-rules.js';

/** An application as the user API (and the Go SDK's `ApplicationInfo`) shows it. */
export interface ApplicationView {
  name: string;
  description: string;
  isActivated: boolean;
  isSystem: boolean;
  createdAt: string;
  natsConfig: { natsAccess: boolean; natsRule: string | null };
  microservices: MicroserviceView[];
}

async function toApplicationView(row: ApplicationRow): Promise<ApplicationView> {
  return {
    name: row.name,
    description: row.description ?? '',
    isActivated: row.isActivated ?? true,
    isSystem: false,
    createdAt: row.createdAt,
    natsConfig: { natsAccess: row.natsAccess === true, natsRule: row.natsRule ?? null },
    microservices: (await listMicroservicesOfApplication(row.name)).map(toMicroserviceView),
  };
}

/**
 * An application's NATS fields after `natsConfig` (absent: unchanged): access on or off, and the account
 * rule (referenced before the row names it; cleared with the access).
 */
async function natsFields(
  name: string,
  nats: NatsConfig | undefined,
  existing: ApplicationRow | undefined,
  field: string,
): Promise<Pick<ApplicationRow, 'natsAccess' | 'natsRule'>> {
  if (nats?.natsRule) await referenceRule('account', nats.natsRule, `app:${name}`, `${field}.natsRule`);
  return natsConfigAfter(nats, existing);
}

const natsChanged = (before: ApplicationRow | undefined, after: ApplicationRow) =>
  (before?.natsAccess ?? false) !== (after.natsAccess ?? false) || before?.natsRule !== after.natsRule;

async function requireApplication(name: string): Promise<ApplicationRow> {
  const row = await getApplication(name);
  if (!row) throw new NotFoundError(`Application with name ${name} not found`);
  return row;
}

export async function createApplication(body: CreateApplicationBody): Promise<ApplicationView> {
  const row: ApplicationRow = {
    name: body.name,
    description: body.description,
    isActivated: body.isActivated ?? true,
    ...(await natsFields(body.name, body.natsConfig, undefined, 'natsConfig')),
    createdAt: new Date().toISOString(),
  };
  await putNewApplication(row);
  if (row.natsAccess) await reconcileApplicationNats(row.name);
  return toApplicationView(row);
}

export async function getApplicationView(name: string): Promise<ApplicationView> {
  return toApplicationView(await requireApplication(name));
}

export async function listApplications(): Promise<ApplicationView[]> {
  return Promise.all((await listApplicationRows()).map(toApplicationView));
}

/** PATCH: description and activation; services address microservices by name, so no rename. */
export async function updateApplication(name: string, patch: PatchApplicationBody): Promise<void> {
  const row = await requireApplication(name);
  if (patch.name !== undefined && patch.name !== name) {
    throw new ValidationError(
      `Field 'name' (${JSON.stringify(patch.name)}) does not match the application in the path (${JSON.stringify(name)}); an application cannot be renamed`,
    );
  }
  const next: ApplicationRow = {
    ...row,
    description: patch.description ?? row.description,
    isActivated: patch.isActivated ?? row.isActivated,
    ...(await natsFields(name, patch.natsConfig, row, 'natsConfig')),
    updatedAt: new Date().toISOString(),
  };
  await putApplication(next);
  if (natsChanged(row, next)) await reconcileApplicationNats(name);
}

/**
 * Removes an application and its microservices, unless one of them backs a service. Its NATS account
 * is disabled (every user revoked) once the row is gone.
 */
export async function deleteApplication(name: string): Promise<void> {
  const row = await requireApplication(name);
  const microservices = await listMicroservicesOfApplication(name);
  for (const microservice of microservices) await checkMicroserviceRemovable(microservice);
  for (const microservice of microservices) await removeMicroservice(microservice, { nats: false });
  await deleteApplicationRow(name);
  const served = microservices.filter((microservice) => microservice.natsAccess);
  if (row.natsAccess || served.length > 0) {
    await reconcileApplicationNats(name);
    // The agents its microservices ran on serve it no more: leaves drop their links into its account.
    await askRouterReconciles(served.map((microservice) => microservice.agentUuid));
  }
}

/** A microservice may have NATS access only in an application that has it: refused before any write. */
function refuseMicroserviceNatsWithout(
  declaration: ApplicationDeclaration,
  applicationAccess: boolean,
): void {
  if (applicationAccess) return;
  const index = declaration.microservices.findIndex((microservice) => microservice.natsConfig?.natsAccess);
  if (index < 0) return;
  throw new ValidationError(
    `Field 'spec.microservices.${index}.natsConfig.natsAccess': application ${declaration.name} has no NATS access; set spec.natsConfig.natsAccess too`,
  );
}

/**
 * Creates (POST) or replaces (PUT) an application from its YAML document: every microservice it lists
 * is created or updated, and on a replace the ones it no longer lists are removed. Every reference
 * (agents, registries) is checked and every removal allowed before anything is written.
 */
export async function applyApplicationDeclaration(
  declaration: ApplicationDeclaration,
  mode: 'create' | { replace: string },
): Promise<ApplicationView> {
  if (mode !== 'create' && mode.replace !== declaration.name) {
    throw new ValidationError(
      `Application name in YAML (${declaration.name}) doesn't match endpoint path (${mode.replace})`,
    );
  }
  for (const [index, microservice] of declaration.microservices.entries()) {
    const prefix = `spec.microservices.${index}.`;
    await resolveDeclaration(
      microservice,
      { agent: `${prefix}agent.name`, registryId: `${prefix}images.registry`, nats: `${prefix}natsConfig` },
      declaration.name,
    );
  }
  const listed = new Set(declaration.microservices.map((microservice) => microservice.name));
  const existing = mode === 'create' ? undefined : await requireApplication(declaration.name);
  const dropped = existing
    ? (await listMicroservicesOfApplication(declaration.name)).filter((row) => !listed.has(row.name))
    : [];
  for (const row of dropped) await checkMicroserviceRemovable(row);

  const row: ApplicationRow = {
    ...existing,
    name: declaration.name,
    description: declaration.description ?? existing?.description,
    isActivated: declaration.isActivated,
    ...(await natsFields(declaration.name, declaration.natsConfig, existing, 'spec.natsConfig')),
    createdAt: existing?.createdAt ?? new Date().toISOString(),
    updatedAt: new Date().toISOString(),
  };
  refuseMicroserviceNatsWithout(declaration, row.natsAccess === true);
  if (existing) await putApplication(row);
  else await putNewApplication(row);
  if (natsChanged(existing, row)) await reconcileApplicationNats(row.name);
  for (const [index, microservice] of declaration.microservices.entries()) {
    const prefix = `spec.microservices.${index}.`;
    await applyMicroserviceDeclaration(
      { ...microservice, application: declaration.name },
      { agent: `${prefix}agent.name`, registryId: `${prefix}images.registry`, nats: `${prefix}natsConfig` },
    );
  }
  for (const microservice of dropped) await removeMicroservice(microservice);
  return toApplicationView(row);
}
