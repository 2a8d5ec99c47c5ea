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

/** The fields fogbridge models; the accepted-and-ignored ones are dropped. */
export const modelledApplication = ({ name }: z.output<typeof createApplicationBody>) => ({ name });

export const modelledMicroservice = ({
  name,
  application,
  agentName,
  iofogUuid,
  hostNetworkMode,
  uuid,
}: z.output<typeof createMicroserviceBody>) => ({
  name,
  application,
  agentName,
  iofogUuid,
  hostNetworkMode,
  uuid,
});

export const modelledMicroservicePatch = ({
  name,
  agentName,
  iofogUuid,
  hostNetworkMode,
}: z.output<typeof patchMicroserviceBody>) => ({ name, agentName, iofogUuid, hostNetworkMode });

export type CreateApplicationBody = ReturnType<typeof modelledApplication>;
export type CreateMicroserviceBody = ReturnType<typeof modelledMicroservice>;
export type PatchMicroserviceBody = ReturnType<typeof modelledMicroservicePatch>;

export function parseCreateApplicationBody(body: unknown): CreateApplicationBody {
  return modelledApplication(parseWith(createApplicationBody, body));
}

export function parseCreateMicroserviceBody(body: unknown): CreateMicroserviceBody {
  return modelledMicroservice(parseWith(createMicroserviceBody, body));
}

export function parsePatchMicroserviceBody(body: unknown): PatchMicroserviceBody {
  return modelledMicroservicePatch(parseWith(patchMicroserviceBody, body));
}
