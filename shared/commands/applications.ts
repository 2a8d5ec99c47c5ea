import type {
  ApplicationDeclaration,
  CreateApplicationBody,
  PatchApplicationBody,
} from '../domain/registry-schema.js';
import { NotFoundError, ValidationError } from '../errors.js';
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

/** An application as the user API (and the Go SDK's `ApplicationInfo`) shows it. */
export interface ApplicationView {
  name: string;
  description: string;
  isActivated: boolean;
  isSystem: boolean;
  createdAt: string;
  microservices: MicroserviceView[];
}

async function toApplicationView(row: ApplicationRow): Promise<ApplicationView> {
  return {
    name: row.name,
    description: row.description ?? '',
    isActivated: row.isActivated ?? true,
    isSystem: false,
    createdAt: row.createdAt,
    microservices: (await listMicroservicesOfApplication(row.name)).map(toMicroserviceView),
  };
}

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
    createdAt: new Date().toISOString(),
  };
  await putNewApplication(row);
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
  await putApplication({
    ...row,
    description: patch.description ?? row.description,
    isActivated: patch.isActivated ?? row.isActivated,
    updatedAt: new Date().toISOString(),
  });
}

/** Removes an application and its microservices, unless one of them backs a service. */
export async function deleteApplication(name: string): Promise<void> {
  await requireApplication(name);
  const microservices = await listMicroservicesOfApplication(name);
  for (const microservice of microservices) await checkMicroserviceRemovable(microservice);
  for (const microservice of microservices) await removeMicroservice(microservice);
  await deleteApplicationRow(name);
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
      { agent: `${prefix}agent.name`, registryId: `${prefix}images.registry` },
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
    createdAt: existing?.createdAt ?? new Date().toISOString(),
    updatedAt: new Date().toISOString(),
  };
  if (existing) await putApplication(row);
  else await putNewApplication(row);
  for (const [index, microservice] of declaration.microservices.entries()) {
    const prefix = `spec.microservices.${index}.`;
    await applyMicroserviceDeclaration(
      { ...microservice, application: declaration.name },
      { agent: `${prefix}agent.name`, registryId: `${prefix}images.registry` },
    );
  }
  for (const microservice of dropped) await removeMicroservice(microservice);
  return toApplicationView(row);
}
