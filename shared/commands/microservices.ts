import { randomUUID } from 'node:crypto';
import type {
  CreateApplicationBody,
  CreateMicroserviceBody,
  PatchMicroserviceBody,
} from '../domain/registry-schema.js';
import { ConflictError, ContentionError, NotFoundError, ValidationError } from '../errors.js';
import { CONFLICT, retryOnConflict } from '../retry.js';
import {
  type ApplicationRow,
  deleteMicroservice as deleteMicroserviceRow,
  getApplication,
  getMicroservice as getMicroserviceRow,
  listApplications,
  listMicroservices as listMicroserviceRows,
  type MicroserviceRow,
  putNewApplication,
  putNewMicroservice,
  replaceMicroservice,
} from '../store/applications.js';
import { raiseChangeFlag } from '../store/changes.js';
import { listServicesBySite } from '../store/services.js';
import { findAgent } from './resolve.js';
import { requeueServices } from './services.js';

export interface MicroserviceView {
  uuid: string;
  name: string;
  application: string;
  iofogUuid: string;
  hostNetworkMode: boolean;
}

const toView = (row: MicroserviceRow): MicroserviceView => ({
  uuid: row.uuid,
  name: row.name,
  application: row.application,
  iofogUuid: row.agentUuid,
  hostNetworkMode: row.hostNetworkMode,
});

export async function createApplication({ name }: CreateApplicationBody): Promise<ApplicationRow> {
  const row = { name, createdAt: new Date().toISOString() };
  await putNewApplication(row);
  return row;
}

export async function getApplicationByName(name: string): Promise<ApplicationRow> {
  const row = await getApplication(name);
  if (!row) throw new NotFoundError(`Application with name ${name} not found`);
  return row;
}

export { listApplications };

async function resolveAgentUuid(
  agentName: string | undefined,
  iofogUuid: string | undefined,
): Promise<string> {
  const reference = iofogUuid ?? agentName;
  const field = iofogUuid !== undefined ? 'iofogUuid' : 'agentName';
  if (reference === undefined)
    throw new ValidationError("Required field 'agentName' or 'iofogUuid' is missing");
  const agent = await findAgent(reference);
  if (!agent) throw new ValidationError(`Field '${field}': agent ${JSON.stringify(reference)} not found`);
  return agent.uuid;
}

export async function createMicroservice(body: CreateMicroserviceBody): Promise<{ uuid: string }> {
  if (!(await getApplication(body.application))) {
    throw new ValidationError(
      `Field 'application': application ${JSON.stringify(body.application)} not found`,
    );
  }
  const agentUuid = await resolveAgentUuid(body.agentName, body.iofogUuid);
  const now = new Date().toISOString();
  const uuid = body.uuid ?? randomUUID();
  await putNewMicroservice({
    uuid,
    name: body.name,
    application: body.application,
    agentUuid,
    hostNetworkMode: body.hostNetworkMode ?? false,
    createdAt: now,
    updatedAt: now,
    version: 1,
  });
  await raiseChangeFlag(agentUuid, 'microserviceList');
  return { uuid };
}

export async function listMicroservices(): Promise<MicroserviceView[]> {
  return (await listMicroserviceRows()).map(toView);
}

export async function getMicroservice(uuid: string): Promise<MicroserviceView> {
  return toView(await requireMicroservice(uuid));
}

async function requireMicroservice(uuid: string): Promise<MicroserviceRow> {
  const row = await getMicroserviceRow(uuid);
  if (!row) throw new NotFoundError(`Microservice with uuid ${uuid} not found`);
  return row;
}

/**
 * Moving a microservice to another agent, or switching its host network mode, changes where and how
 * its services' connectors dial: those services are reconciled (the old site loses the connector).
 */
export async function updateMicroservice(uuid: string, patch: PatchMicroserviceBody): Promise<void> {
  if (patch.name !== undefined) {
    throw new ValidationError(
      "Field 'name' cannot be changed: services address the microservice as <application>/<name>",
    );
  }
  await retryOnConflict(
    async () => {
      const row = await requireMicroservice(uuid);
      const moving = patch.agentName !== undefined || patch.iofogUuid !== undefined;
      const agentUuid = moving ? await resolveAgentUuid(patch.agentName, patch.iofogUuid) : row.agentUuid;
      const next: MicroserviceRow = {
        ...row,
        agentUuid,
        hostNetworkMode: patch.hostNetworkMode ?? row.hostNetworkMode,
        updatedAt: new Date().toISOString(),
      };
      if (!(await replaceMicroservice(next, row))) return CONFLICT;
      if (next.agentUuid !== row.agentUuid) {
        await raiseChangeFlag(row.agentUuid, 'microserviceList');
        await raiseChangeFlag(next.agentUuid, 'microserviceList');
      } else if (next.hostNetworkMode !== row.hostNetworkMode) {
        await raiseChangeFlag(row.agentUuid, 'microserviceConfig');
      }
      if (next.agentUuid !== row.agentUuid || next.hostNetworkMode !== row.hostNetworkMode) {
        const affected = (await listServicesBySite(row.agentUuid)).filter(
          (service) => service.type === 'microservice' && service.resource === uuid,
        );
        await requeueServices(affected, `microservice-${next.version ?? row.version + 1}`);
      }
    },
    {
      times: 5,
      exhausted: () =>
        new ContentionError(`Microservice ${uuid} is being changed concurrently; retry the request`),
    },
  );
}

export async function deleteMicroservice(uuid: string): Promise<void> {
  const row = await requireMicroservice(uuid);
  const users = (await listServicesBySite(row.agentUuid)).filter(
    (service) => service.type === 'microservice' && service.resource === uuid,
  );
  if (users.length > 0) {
    throw new ConflictError(
      `Microservice ${row.application}/${row.name} backs services ${users.map((s) => s.name).join(', ')}; delete them first`,
    );
  }
  await deleteMicroserviceRow(row);
  await raiseChangeFlag(row.agentUuid, 'microserviceList');
}
