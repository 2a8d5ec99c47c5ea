import { createHash } from 'node:crypto';
import { microserviceCredsMount } from '../domain/nats-accounts.js';
import { credsFile } from '../domain/nats-claims.js';
import { natsArtefacts } from '../domain/nats-conf.js';
import { routerCertificateSpecs } from '../domain/router-site.js';
import { NotFoundError } from '../errors.js';
import { openSecret } from '../secrets.js';
import { type AgentRow, getAgentRow } from '../store/agents.js';
import { listMicroservicesByAgent, type MicroserviceRow } from '../store/applications.js';
import { type CertificateRow, getCertificate } from '../store/certificates.js';
import { getMounts, mountData } from '../store/mounts.js';
import { getNatsInstance, type NatsInstanceRow } from '../store/nats.js';
import {
  getAccountRows,
  getBundleVersion,
  getUserRows,
  listAccountRows,
  openUserSeed,
  type UserRow,
} from '../store/nats-accounts.js';
import { systemAccountJwt } from '../store/nats-identities.js';

/**
 * The volume mounts an agent receives (GET /api/v3/agent/volumeMounts, the reference's shape): one per
 * certificate it holds, `type: secret`, with base64 `ca.crt`, `tls.crt` and `tls.key`; `version` is the
 * certificate's, so a reissue makes Edgelet rewrite the files. Only the agent's own certificates, read
 * by name (consistently), are ever unsealed here.
 */
export interface VolumeMount {
  uuid: string;
  name: string;
  version: number;
  type: 'secret' | 'configMap';
  data: Record<string, string>;
}

/** A stable uuid for a mount name (name-based, as the reference's are stable per mount). */
function mountUuid(name: string): string {
  const hex = createHash('sha1').update(`fogbridge-volume-mount:${name}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${((Number.parseInt(hex[16]!, 16) & 3) | 8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The agent's certificates that exist, in the order its router config names them. */
export async function heldCertificates(agent: AgentRow): Promise<CertificateRow[]> {
  return ownCertificates(
    agent,
    routerCertificateSpecs(agent).map((spec) => spec.name),
  );
}

async function ownCertificates(agent: AgentRow, names: readonly string[]): Promise<CertificateRow[]> {
  const rows = await Promise.all(names.map((name) => getCertificate(name)));
  return rows.filter((row): row is CertificateRow => row?.agentUuid === agent.uuid);
}

const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

/**
 * The creds each of these microservices gets, by uuid: those with NATS access whose user exists in
 * their application's account (the application's reconcile makes it, before the agent is told).
 */
export async function microserviceCreds(
  microservices: readonly MicroserviceRow[],
): Promise<Map<string, { mount: ReturnType<typeof microserviceCredsMount>; user: UserRow }>> {
  const wanting = microservices.filter((ms) => ms.natsAccess === true);
  const users = await getUserRows(wanting.map((ms) => ({ application: ms.application, name: ms.name })));
  const creds = new Map<string, { mount: ReturnType<typeof microserviceCredsMount>; user: UserRow }>();
  for (const ms of wanting) {
    const user = users.find((row) => row.kind === 'microservice' && row.microserviceUuid === ms.uuid);
    if (user) creds.set(ms.uuid, { mount: microserviceCredsMount(ms.application, ms.name), user });
  }
  return creds;
}

/** A microservice's creds mount: one secret with its creds file; its version is the user's issue. */
async function credsMounts(agentUuid: string): Promise<VolumeMount[]> {
  const creds = await microserviceCreds(await listMicroservicesByAgent(agentUuid));
  return Promise.all(
    [...creds.values()].map(async ({ mount, user }) => ({
      uuid: mountUuid(mount.name),
      name: mount.name,
      version: user.version,
      type: 'secret' as const,
      data: { [mount.key]: base64(credsFile(user.jwt, await openUserSeed(user))) },
    })),
  );
}

const JWT_DIRECTORY_PREFIX = natsArtefacts('', 'leaf').jwtMount;

/**
 * A NATS process's JWT directory, composed when read: the system account and, for a server, every
 * application account (disabled ones too, so running servers drop them), for a leaf the accounts it
 * links into. Its version is the fleet's directory version, read first: every change to what any
 * directory holds moves it on after the change is written, so what is read is at least that new.
 */
async function jwtDirectory(instance: NatsInstanceRow, version: number): Promise<VolumeMount> {
  const name = natsArtefacts(instance.agentToken ?? '', instance.role).jwtMount;
  const [system, accounts] = await Promise.all([
    systemAccountJwt(),
    instance.role === 'leaf' ? getAccountRows(instance.leafAccounts ?? []) : listAccountRows(),
  ]);
  const files = [
    [`${system.publicKey}.jwt`, system.jwt],
    ...accounts.map((account) => [`${account.publicKey}.jwt`, account.jwt]),
  ];
  return {
    uuid: mountUuid(name),
    name,
    version,
    type: 'configMap',
    data: Object.fromEntries(files.map(([file, jwt]) => [file!, base64(jwt!)])),
  };
}

/**
 * Its router's certificates, then what its NATS microservice mounts (the NATS certificates, the
 * rendered config — a secret: it holds the JetStream key —, the JWT directory and the creds file), then
 * the creds of its microservices with NATS access.
 */
export async function listAgentVolumeMounts(agentUuid: string): Promise<VolumeMount[]> {
  const agent = await getAgentRow(agentUuid);
  if (!agent) throw new NotFoundError(`Agent with uuid ${agentUuid} not found`);
  // The directories' version before the instance: it moves on only after the instance that names the
  // directory's accounts is written, so a version read first is never newer than the instance read next.
  const directoryVersion = agent.natsMode === 'none' ? 0 : await getBundleVersion();
  const instance = agent.natsMode === 'none' ? undefined : await getNatsInstance(agentUuid);
  const natsMounted = new Set(
    (instance?.microservice.volumeMappings ?? [])
      .filter((mapping) => mapping.type === 'volumeMount')
      .map((mapping) => mapping.hostDestination),
  );
  const [routerCertificates, natsCertificates, natsMounts] = await Promise.all([
    heldCertificates(agent),
    ownCertificates(agent, instance?.certificates ?? []),
    getMounts(
      [...natsMounted].filter(
        (name) => !instance?.certificates.includes(name) && !name.startsWith(JWT_DIRECTORY_PREFIX),
      ),
    ),
  ]);
  const certificateMounts = await Promise.all(
    [...routerCertificates, ...natsCertificates].map(async (row) => ({
      uuid: mountUuid(row.name),
      name: row.name,
      version: row.version,
      type: 'secret' as const,
      data: {
        'ca.crt': base64(row.caPem),
        'tls.crt': base64(row.certPem),
        'tls.key': base64(await openSecret(row.keySealed, row.name)),
      },
    })),
  );
  const otherMounts = await Promise.all(
    natsMounts
      .filter((row) => row.agentUuid === agent.uuid)
      .map(async (row) => ({
        uuid: mountUuid(row.name),
        name: row.name,
        version: row.version,
        type: row.type,
        data: Object.fromEntries(
          Object.entries(await mountData(row)).map(([key, value]) => [key, base64(value)]),
        ),
      })),
  );
  const directory = instance?.agentToken ? [await jwtDirectory(instance, directoryVersion)] : [];
  // The NATS files in the order its microservice maps them.
  const order = [...natsMounted];
  const natsFiles = [...otherMounts, ...directory].sort(
    (a, b) => order.indexOf(a.name) - order.indexOf(b.name),
  );
  return [...certificateMounts, ...natsFiles, ...(await credsMounts(agentUuid))];
}
