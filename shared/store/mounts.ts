import { createHash } from 'node:crypto';
import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { openSecret, sealSecret } from '../secrets.js';
import { batchGetItems, conditionalWrite, documentClient, getItem, keys, tableName } from './client.js';

/**
 * A volume mount fogbridge hands an agent besides its certificates: a config map (plain data) or a
 * secret (data sealed at rest), with a `version` that goes up exactly when the data changes (Edgelet
 * rewrites a mount's files only then) and the agent it belongs to.
 */
export interface MountRow {
  name: string;
  agentUuid: string;
  type: 'secret' | 'configMap';
  /** configMap data as stored; a secret's data is sealed in `dataSealed`. */
  data?: Record<string, string>;
  dataSealed?: string;
  hash: string;
  version: number;
  updatedAt: string;
}

const hashOf = (data: Record<string, string>) =>
  createHash('sha256')
    .update(JSON.stringify(Object.entries(data).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))))
    .digest('hex');

export function getMount(name: string): Promise<MountRow | undefined> {
  return getItem<MountRow>(keys.mount(name));
}

/** The mounts of these names that exist, in the order asked. */
export async function getMounts(names: readonly string[]): Promise<MountRow[]> {
  const found = await batchGetItems<MountRow>(names.map((name) => keys.mount(name)));
  return names.flatMap((_, index) => (found.has(index) ? [found.get(index)!] : []));
}

/** A mount's data in clear (a secret's unsealed). */
export async function mountData(row: MountRow): Promise<Record<string, string>> {
  if (row.type === 'configMap') return row.data ?? {};
  return JSON.parse(await openSecret(row.dataSealed!, row.name)) as Record<string, string>;
}

/**
 * Writes the mount when its data differs from what is stored (version + 1, conditioned on the version
 * read); true when it wrote. A lost race is reported as a write: the caller raises the agent's flag
 * either way, and the winner's version is the one delivered.
 */
export async function putMountIfChanged(
  name: string,
  agentUuid: string,
  type: MountRow['type'],
  data: Record<string, string>,
): Promise<boolean> {
  const existing = await getMount(name);
  const hash = hashOf(data);
  if (existing && existing.hash === hash && existing.agentUuid === agentUuid && existing.type === type)
    return false;
  const row: MountRow = {
    name,
    agentUuid,
    type,
    ...(type === 'configMap' ? { data } : { dataSealed: await sealSecret(JSON.stringify(data), name) }),
    hash,
    version: (existing?.version ?? 0) + 1,
    updatedAt: new Date().toISOString(),
  };
  await conditionalWrite(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.mount(name), ...row },
      ConditionExpression: existing ? '#v = :v' : 'attribute_not_exists(PK)',
      ...(existing
        ? {
            ExpressionAttributeNames: { '#v': 'version' },
            ExpressionAttributeValues: { ':v': existing.version },
          }
        : {}),
    }),
  );
  return true;
}

export async function deleteMount(name: string): Promise<void> {
  await documentClient().send(new DeleteCommand({ TableName: tableName(), Key: keys.mount(name) }));
}
