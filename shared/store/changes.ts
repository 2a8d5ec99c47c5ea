import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { conditionalWrite, documentClient, keys, tableName } from './client.js';

/** The change flags an Edgelet polls, named as the reference controller's code names them. */
export const CHANGE_FLAGS = [
  'config',
  'version',
  'reboot',
  'deleteNode',
  'microserviceList',
  'microserviceConfig',
  'registries',
  'tunnel',
  'diagnostics',
  'isImageSnapshot',
  'prune',
  'routerChanged',
  'linkedEdgeResources',
  'volumeMounts',
  'execSessions',
  'microserviceLogs',
  'fogLogs',
] as const;
export type ChangeFlag = (typeof CHANGE_FLAGS)[number];

/**
 * Stamps taken from the same change counter as the flags but never shown as flags: `siteCertificate`
 * marks the last write of the agent's router site certificate (a link dialled anew to it waits until the
 * agent acknowledged it), and `rebuildRouter` and `rebuildNats` hold the router or NATS microservice's
 * `rebuild` up from the write that changed what its running process only reads when it starts, until the
 * agent acknowledges that change.
 */
export type ChangeStamp = ChangeFlag | 'rebuildRouter' | 'rebuildNats' | 'siteCertificate';

/**
 * Raises a flag. Each raise takes the next number of the agent's change counter and stamps the flag
 * with it; a flag is up while its stamp is above what the agent acknowledged. No clock is involved,
 * so a change written while the agent was reading is never acknowledged away.
 */
export async function raiseChangeFlag(agentUuid: string, flag: ChangeFlag): Promise<void> {
  await raiseChangeFlags(agentUuid, [flag]);
}

/**
 * Raises several flags in one write, all stamped with the same next number, and returns that stamp (a
 * rebuild holds while it is above the acknowledgement).
 */
export async function raiseChangeFlags(agentUuid: string, flags: readonly ChangeStamp[]): Promise<number> {
  const update = changeFlagsUpdate(flags);
  const { Attributes } = await documentClient().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.changes(agentUuid),
      UpdateExpression: `SET ${update.set}`,
      ExpressionAttributeNames: update.names,
      ExpressionAttributeValues: update.values,
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  return Number(Attributes?.changeSeq ?? 0);
}

/**
 * The update that raises `flags` (see `raiseChangeFlags`), to join another SET on the agent's request
 * record: the fog worker raises what it owes the agent with the write that marks its requests completed.
 */
export function changeFlagsUpdate(flags: readonly ChangeStamp[]): {
  set: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
} {
  const stamps = flags.map((_, index) => `#flag${index} = if_not_exists(changeSeq, :zero) + :one`);
  return {
    set: ['changeSeq = if_not_exists(changeSeq, :zero) + :one', ...stamps, 'updatedAt = :now'].join(', '),
    names: Object.fromEntries(flags.map((flag, index) => [`#flag${index}`, `seq_${flag}`])),
    values: { ':zero': 0, ':one': 1, ':now': new Date().toISOString() },
  };
}

export interface ChangeState {
  flags: Record<ChangeFlag, boolean>;
  /** The change counter at read time; the agent sends it back to acknowledge. */
  lastUpdated: number;
  /** What the agent acknowledged last. */
  acknowledged: number;
  /** The counter value of the last change to the agent's router config (0: none yet). */
  configChanged: number;
  /** Whether a change its running router reads only at start waits for the agent's acknowledgement. */
  rebuildRouter: boolean;
  /** Whether a change its running NATS process reads only at start waits for it, likewise. */
  rebuildNats: boolean;
  /** Its router site certificate was written after what the agent acknowledged. */
  siteCertificate: boolean;
}

export async function readChangeFlags(agentUuid: string): Promise<ChangeState> {
  const { Item } = await documentClient().send(
    new GetCommand({ TableName: tableName(), Key: keys.changes(agentUuid), ConsistentRead: true }),
  );
  return changeStateOf(Item);
}

/** The change state an agent's request record holds (the item `keys.changes` names). */
export function changeStateOf(Item: Record<string, unknown> | undefined): ChangeState {
  const acked = Number(Item?.ackedSeq ?? 0);
  const flags = Object.fromEntries(
    CHANGE_FLAGS.map((flag) => [flag, Number(Item?.[`seq_${flag}`] ?? 0) > acked]),
  ) as Record<ChangeFlag, boolean>;
  return {
    flags,
    lastUpdated: Number(Item?.changeSeq ?? 0),
    acknowledged: acked,
    configChanged: Number(Item?.seq_microserviceConfig ?? 0),
    rebuildRouter: Number(Item?.seq_rebuildRouter ?? 0) > acked,
    rebuildNats: Number(Item?.seq_rebuildNats ?? 0) > acked,
    siteCertificate: Number(Item?.seq_siteCertificate ?? 0) > acked,
  };
}

/**
 * Acknowledges every change up to `lastUpdated` (never moving the acknowledgement back). Returns false
 * when `lastUpdated` is ahead of the counter: the agent cannot acknowledge what it was never shown.
 */
export async function acknowledgeChanges(agentUuid: string, lastUpdated: number): Promise<boolean> {
  return (await acknowledge(agentUuid, lastUpdated)) !== 'ahead';
}

/**
 * `acknowledgeChanges`, saying what it did: `moved` when this acknowledgement is new, `same` when it was
 * acknowledged already (Edgelet acknowledges on every tick), `ahead` when it was refused.
 */
export async function acknowledge(
  agentUuid: string,
  lastUpdated: number,
): Promise<'moved' | 'same' | 'ahead'> {
  const moved = await conditionalWrite(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.changes(agentUuid),
      UpdateExpression: 'SET ackedSeq = :seen',
      ConditionExpression: 'changeSeq >= :seen AND (attribute_not_exists(ackedSeq) OR ackedSeq < :seen)',
      ExpressionAttributeValues: { ':seen': lastUpdated },
    }),
  );
  if (moved) return 'moved';
  return lastUpdated <= (await readChangeFlags(agentUuid)).lastUpdated ? 'same' : 'ahead';
}
