import { createHash } from 'node:crypto';
import { config } from '../context.js';
import { NATS_PATHS, type NatsArtefacts, natsPortsOf } from '../domain/nats-conf.js';
import { agentCertificateToken } from '../domain/router-site.js';
import type { AgentRow } from '../store/agents.js';
import { deleteCertificate, getCertificate } from '../store/certificates.js';
import { type ChangeStamp, raiseChangeFlags } from '../store/changes.js';
import { deleteMount } from '../store/mounts.js';
import {
  clearPendingTell,
  deleteNatsInstance,
  type NatsInstanceRow,
  type NatsMicroserviceSpec,
  type NatsRole,
  putNatsInstance,
} from '../store/nats.js';
import { bumpBundleVersion } from '../store/nats-accounts.js';
import { deleteSystemUser } from '../store/nats-identities.js';
import { revokeLeafLinks } from './nats-agent-accounts.js';

/**
 * An agent's NATS process as stored (its instance row: role, template, files, microservice) and as its
 * Edgelet is told of it; and what goes when the process changes role or goes away.
 */

/** The NATS microservice: ports 1:1, the NATS image's environment, its mounts. */
export function instanceRow(
  agent: AgentRow,
  role: NatsRole,
  template: string,
  artefacts: NatsArtefacts,
  certificates: string[],
  links: readonly { application: string }[] = [],
): NatsInstanceRow {
  const ports = natsPortsOf(agent);
  const mount = (name: string, containerDestination: string, accessMode = 'ro') => ({
    hostDestination: name,
    containerDestination,
    accessMode,
    type: 'volumeMount',
  });
  const microservice: NatsMicroserviceSpec = {
    application: `system-${agent.name}`,
    imageId: config().nats.image,
    registryId: config().nats.registryId,
    ports: [ports.serverPort, ports.clusterPort, ports.leafPort, ports.mqttPort, ports.httpPort],
    env: [
      ['JETSTREAM_PREV_KEY', ''],
      ['NATS_JWT_DIR', NATS_PATHS.jwtDir],
      ['NATS_JWT_MOUNT_DIR', NATS_PATHS.jwtMountDir],
      ['NATS_CREDS_DIR', NATS_PATHS.credsDir],
      ['NATS_SYS_USER_CRED_PATH', `${NATS_PATHS.credsDir}/${artefacts.credsKey}`],
      ['NATS_TLS_DIR', NATS_PATHS.tlsDir],
      ['NATS_CERT_NAME', artefacts.serverCertificate],
      ['NATS_MQTT_CERT_NAME', artefacts.mqttCertificate],
      ['NATS_CONF', `${NATS_PATHS.configDir}/server.conf`],
      ['NATS_SERVER_PORT', String(ports.serverPort)],
      ['NATS_LEAF_PORT', String(ports.leafPort)],
      ['NATS_CLUSTER_PORT', String(ports.clusterPort)],
      ['NATS_MQTT_PORT', String(ports.mqttPort)],
      ['NATS_HTTP_PORT', String(ports.httpPort)],
      ['NATS_MONITOR_PORT', String(ports.httpPort)],
      ['NATS_JETSTREAM_STORE_DIR', NATS_PATHS.dataDir],
      ['NATS_SERVER_MODE', role === 'leaf' ? 'leaf' : 'server'],
    ].map(([key, value]) => ({ key: key!, value: value! })),
    volumeMappings: [
      {
        hostDestination: `${agent.name}-nats-jetstream`,
        containerDestination: NATS_PATHS.dataDir,
        accessMode: 'rw',
        type: 'volume',
      },
      mount(artefacts.configMount, NATS_PATHS.configDir),
      mount(artefacts.jwtMount, NATS_PATHS.jwtMountDir, 'rw'),
      mount(artefacts.serverCertificate, `${NATS_PATHS.tlsDir}/${artefacts.serverCertificate}`),
      mount(artefacts.mqttCertificate, `${NATS_PATHS.tlsDir}/${artefacts.mqttCertificate}`),
      mount(artefacts.credsMount, NATS_PATHS.credsDir),
    ],
    jetstreamKeyMount: artefacts.jetstreamKey,
  };
  return {
    agentUuid: agent.uuid,
    role,
    template,
    certificates,
    mounts: [artefacts.configMount, artefacts.credsMount, artefacts.jetstreamKey],
    users: [artefacts.user],
    leafAccounts: links.map((link) => link.application),
    agentToken: agentCertificateToken(agent.name),
    microservice,
    specHash: createHash('sha256').update(JSON.stringify(microservice)).digest('hex'),
    rebuildSeq: 0,
    updatedAt: new Date().toISOString(),
  };
}

/**
 * Tells the agent what changed: its files (`volumeMounts`), its microservice (`microserviceList`), and,
 * when files of a running NATS process changed, a rebuild (NATS reads its config, certificates and creds
 * when it starts). A change to what its JWT directory holds is only a `volumeMounts`: the NATS
 * container pushes the accounts to its running server itself.
 *
 * The agent is told last: the instance is written first, with what the agent is still to be told of it
 * (`pendingTell`), then the directories' version moves on (when what this one holds changed), then the
 * flags go up with the rebuild's stamp in one write, then the pending tell is cleared. An agent that
 * reads between two of these writes acknowledges only flags raised before them and is told again once
 * everything it must read is there (had the flags gone up first, it could read the old instance,
 * acknowledge, and never be told of the new one); a reconcile that stopped before telling finds the
 * pending tell on its next run and tells it then, although nothing differs any more.
 */
export async function deliver(
  agentUuid: string,
  previous: NatsInstanceRow | undefined,
  next: NatsInstanceRow,
  changed: { files: boolean; directory: boolean },
): Promise<void> {
  const specChanged = previous?.specHash !== next.specHash || previous.role !== next.role;
  // The agent re-reads its mounts when a file changed, and its microservices (a rebuild of a running
  // NATS process when a file did) when its spec or a file did.
  const listChanged = specChanged || (previous !== undefined && changed.files);
  const owed = previous?.pendingTell;
  const directory = changed.directory || owed?.directory === true;
  const stamps = [
    ...new Set<ChangeStamp>([
      ...(owed?.stamps ?? []),
      ...(changed.files || changed.directory ? (['volumeMounts'] as const) : []),
      ...(listChanged ? (['microserviceList'] as const) : []),
      ...(previous && listChanged ? (['rebuildNats'] as const) : []),
    ]),
  ];
  // Rows written before the rebuild's stamp moved to the agent's change record keep theirs until then.
  const row: NatsInstanceRow = {
    ...next,
    rebuildSeq: previous?.rebuildSeq ?? 0,
    ...(stamps.length > 0 || directory ? { pendingTell: { stamps, directory } } : {}),
  };
  if (!sameInstance(previous, row)) await putNatsInstance(row);
  if (directory) await bumpBundleVersion();
  if (stamps.length > 0) await raiseChangeFlags(agentUuid, stamps);
  if (row.pendingTell) await clearPendingTell(agentUuid);
}

function sameInstance(previous: NatsInstanceRow | undefined, row: NatsInstanceRow): boolean {
  if (!previous) return false;
  const fields = (instance: NatsInstanceRow) =>
    JSON.stringify([
      instance.specHash,
      instance.template,
      instance.certificates,
      instance.mounts,
      instance.users,
      instance.role,
      instance.leafAccounts,
      instance.agentToken,
      instance.pendingTell,
    ]);
  return fields(previous) === fields(row);
}

/** What the previous NATS process had and the new one does not (a role or name change). */
export async function removeStaleArtefacts(previous: NatsInstanceRow | undefined, next: NatsInstanceRow) {
  if (!previous) return;
  for (const name of previous.mounts.filter((mount) => !next.mounts.includes(mount))) await deleteMount(name);
  for (const name of previous.users.filter((user) => !next.users.includes(user)))
    await deleteSystemUser(name);
  for (const name of previous.certificates.filter(
    (certificate) => !next.certificates.includes(certificate),
  )) {
    await deleteOwnedCertificate(name, previous.agentUuid);
  }
}

/** natsMode none, or the agent is gone: nothing of its NATS process stays, nor its leaf links. */
export async function removeNatsInstance(instance: NatsInstanceRow, agentExists: boolean): Promise<void> {
  if (instance.leafAccounts?.length) {
    await revokeLeafLinks(instance.agentToken ?? '', instance.leafAccounts);
  }
  for (const name of instance.mounts) await deleteMount(name);
  for (const name of instance.users) await deleteSystemUser(name);
  for (const name of instance.certificates) await deleteOwnedCertificate(name, instance.agentUuid);
  await deleteNatsInstance(instance.agentUuid);
  if (agentExists) {
    await raiseChangeFlags(instance.agentUuid, ['microserviceList', 'volumeMounts']);
  }
}

export async function deleteOwnedCertificate(name: string, agentUuid: string): Promise<void> {
  if ((await getCertificate(name))?.agentUuid === agentUuid) await deleteCertificate(name);
}
