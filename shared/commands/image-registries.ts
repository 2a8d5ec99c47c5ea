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
  // An id is written as the API hands it out: `011` is not registry 11.
  if (!/^[1-9]\d{0,8}$/.test(idText)) {
    throw new ValidationError(
      `Path parameter 'id' must be a registry id (a whole number from 1, without leading zeros), got ${JSON.stringify(idText)}`,
    );
  }
  const id = Number(idText);
  const registry = await getImageRegistry(id);
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
