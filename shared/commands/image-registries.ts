import type { CreateImageRegistryBody } from '../domain/image-registry-schema.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { listAgentRows } from '../store/agents.js';
import { listMicroservices } from '../store/applications.js';
import { raiseChangeFlag } from '../store/changes.js';
import {
  BUILT_IN_REGISTRIES,
  deleteImageRegistry,
  getImageRegistry,
  type ImageRegistryRow,
  listImageRegistries,
  putNewImageRegistry,
} from '../store/image-registries.js';

/** A registry as users see it: never its password. */
export interface ImageRegistryView {
  id: number;
  url: string;
  isPublic: boolean;
  username: string;
  userEmail: string;
}

const toView = ({ id, url, isPublic, username, userEmail }: ImageRegistryRow): ImageRegistryView => ({
  id,
  url,
  isPublic,
  username,
  userEmail,
});

export async function listImageRegistryViews(): Promise<ImageRegistryView[]> {
  return (await listImageRegistries()).map(toView);
}

/** Every agent re-reads its registries (Edgelet's `registries` flag) when one is added or removed. */
async function announceRegistriesChanged(): Promise<void> {
  await Promise.all((await listAgentRows()).map((agent) => raiseChangeFlag(agent.uuid, 'registries')));
}

export async function createImageRegistry(body: CreateImageRegistryBody): Promise<{ id: number }> {
  if (!body.isPublic && !body.username) {
    throw new ValidationError("Required field 'username' is missing (a private registry needs credentials)");
  }
  const row = await putNewImageRegistry({
    url: body.url,
    isPublic: body.isPublic,
    username: body.username ?? '',
    password: body.password ?? '',
    userEmail: body.email ?? '',
    createdAt: new Date().toISOString(),
  });
  await announceRegistriesChanged();
  return { id: row.id };
}

export async function removeImageRegistry(idText: string): Promise<void> {
  const id = Number(idText);
  const registry = /^\d{1,9}$/.test(idText) ? await getImageRegistry(id) : undefined;
  if (!registry) throw new NotFoundError(`Registry with id ${idText} not found`);
  if (BUILT_IN_REGISTRIES.some((builtIn) => builtIn.id === id)) {
    throw new ConflictError(`Registry ${id} (${registry.url}) is built in and cannot be deleted`);
  }
  const users = (await listMicroservices()).filter((microservice) => microservice.registryId === id);
  if (users.length > 0) {
    throw new ConflictError(
      `Registry ${id} is used by microservices ${users.map((m) => `${m.application}/${m.name}`).join(', ')}`,
    );
  }
  await deleteImageRegistry(id);
  await announceRegistriesChanged();
}
