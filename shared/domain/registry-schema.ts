import { z } from 'zod';
import { parseWith } from './validation.js';

/** Applications and microservices are kept only as a registry that `spec.resource` resolves against. */
const registryName = z.string().refine((value) => /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(value), {
  message: 'must be a DNS label (lowercase letters, digits and dashes, at most 63 characters)',
});

/** Reference fields with no use here, accepted and ignored so existing clients keep working. */
export const IGNORED_APPLICATION_FIELDS = [
  'isActivated',
  'description',
  'isSystem',
  'natsConfig',
  'microservices',
] as const;
export const IGNORED_MICROSERVICE_FIELDS = [
  'images',
  'config',
  'rebuild',
  'portMappings',
  'volumeMappings',
  'env',
  'cmd',
  'cdiDevices',
  'capAdd',
  'capDrop',
  'runAsUser',
  'platform',
  'runtime',
  'registryId',
  'catalogItemId',
  'logSize',
  'isPrivileged',
  'schedule',
  'extraHosts',
  'annotations',
  'healthCheck',
  'pidMode',
  'ipcMode',
] as const;

const ignored = (fields: readonly string[]) =>
  Object.fromEntries(fields.map((field) => [field, z.unknown().optional()]));

export const createApplicationBody = z.strictObject({
  ...ignored(IGNORED_APPLICATION_FIELDS),
  name: registryName,
});

const microserviceUuid = z.string().refine((value) => /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/.test(value), {
  message: 'must be 1-64 letters, digits or dashes',
});

export const createMicroserviceBody = z.strictObject({
  ...ignored(IGNORED_MICROSERVICE_FIELDS),
  name: registryName,
  application: registryName,
  agentName: z.string().min(1).optional(),
  iofogUuid: z.string().min(1).optional(),
  hostNetworkMode: z.boolean().optional(),
  /** Lets a tool import a microservice under the uuid it already has. */
  uuid: microserviceUuid.optional(),
});

export const patchMicroserviceBody = z.strictObject({
  ...ignored(IGNORED_MICROSERVICE_FIELDS),
  name: registryName.optional(),
  agentName: z.string().min(1).optional(),
  iofogUuid: z.string().min(1).optional(),
  hostNetworkMode: z.boolean().optional(),
});

export function parseCreateApplicationBody(body: unknown) {
  const { name } = parseWith(createApplicationBody, body);
  return { name };
}

export function parseCreateMicroserviceBody(body: unknown) {
  const { name, application, agentName, iofogUuid, hostNetworkMode, uuid } = parseWith(
    createMicroserviceBody,
    body,
  );
  return { name, application, agentName, iofogUuid, hostNetworkMode, uuid };
}

export function parsePatchMicroserviceBody(body: unknown) {
  const { name, agentName, iofogUuid, hostNetworkMode } = parseWith(patchMicroserviceBody, body);
  return { name, agentName, iofogUuid, hostNetworkMode };
}
