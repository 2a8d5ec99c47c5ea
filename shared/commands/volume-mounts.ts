import { createHash } from 'node:crypto';
import { routerCertificateSpecs } from '../domain/router-site.js';
import { NotFoundError } from '../errors.js';
import { openSecret } from '../secrets.js';
import { type AgentRow, getAgentRow } from '../store/agents.js';
import { type CertificateRow, getCertificate } from '../store/certificates.js';
import { getMounts, mountData } from '../store/mounts.js';
import { getNatsInstance } from '../store/nats.js';

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
 * Its router's certificates, then what its NATS microservice mounts: the NATS certificates, the
 * rendered config (a secret: it holds the JetStream key), the JWT directory and the creds file.
 */
export async function listAgentVolumeMounts(agentUuid: string): Promise<VolumeMount[]> {
  const agent = await getAgentRow(agentUuid);
  if (!agent) throw new NotFoundError(`Agent with uuid ${agentUuid} not found`);
  const instance = agent.natsMode === 'none' ? undefined : await getNatsInstance(agentUuid);
  const natsMounted = new Set(
    (instance?.microservice.volumeMappings ?? [])
      .filter((mapping) => mapping.type === 'volumeMount')
      .map((mapping) => mapping.hostDestination),
  );
  const [routerCertificates, natsCertificates, natsMounts] = await Promise.all([
    heldCertificates(agent),
    ownCertificates(agent, instance?.certificates ?? []),
    getMounts([...natsMounted].filter((name) => !instance?.certificates.includes(name))),
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
  return [...certificateMounts, ...otherMounts];
}
