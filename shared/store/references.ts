import { randomUUID } from 'node:crypto';
import { DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { conditionalWrite, documentClient, keys, tableName } from './client.js';
import { queryPartition } from './query.js';

/**
 * References that must never dangle: a NATS leaf to the servers it links to, a router to the interior
 * routers it links to, a service to the microservice behind it. Without transactions, a reference and the removal of what it names are made
 * safe by an order both sides keep:
 *
 * - whoever makes a reference writes its own row, then a reference item under the target, then
 *   *touches* the target: a conditional write that fails when the target is gone or can no longer be
 *   referenced (a server that is no longer one), and that changes the target's reference token;
 * - whoever removes (or changes) a target reads it with its token, reads the reference items under it
 *   (consistently), and writes the target conditioned on the token it read.
 *
 * A reference made before the remover read the items is seen there; one made after is touched after the
 * remover read the token, so either the touch fails (the target is gone: the maker undoes its reference)
 * or the remover's conditional write does (it reads the references again). Reference items of sources
 * that no longer reference the target are stale, not wrong: readers check each source's row.
 */

export type ReferenceKind = 'nats-upstream' | 'router-upstream' | 'backend' | 'nats-rule';

export interface TargetKey {
  PK: string;
  SK: string;
}

/**
 * What can be referenced: an agent (a NATS server), a microservice (a service's backend), a NATS rule
 * (by the applications, microservices and users signed with it).
 */
export const referenceTarget = {
  agent: (uuid: string): TargetKey => keys.agent(uuid),
  microservice: (uuid: string): TargetKey => keys.microservice(uuid),
  natsRule: (kind: 'account' | 'user', name: string): TargetKey => keys.natsRule(kind, name),
};

const referenceKey = (target: TargetKey, kind: ReferenceKind, source: string) => ({
  PK: `REFS#${target.PK}`,
  SK: `${kind}#${source}`,
});

/** Records that `source` references `target` (before the target is touched). */
export async function recordReference(target: TargetKey, kind: ReferenceKind, source: string): Promise<void> {
  await documentClient().send(
    new PutCommand({
      TableName: tableName(),
      Item: { ...referenceKey(target, kind, source), kind, source, recordedAt: new Date().toISOString() },
    }),
  );
}

/** Forgets a reference `source` no longer makes (or never completed). */
export async function forgetReference(target: TargetKey, kind: ReferenceKind, source: string): Promise<void> {
  await documentClient().send(
    new DeleteCommand({ TableName: tableName(), Key: referenceKey(target, kind, source) }),
  );
}

/** The sources recorded as referencing `target` (read consistently; some may be stale). */
export async function referencingSources(target: TargetKey, kind: ReferenceKind): Promise<string[]> {
  const items = await queryPartition<{ kind: ReferenceKind; source: string }>(`REFS#${target.PK}`);
  return items.filter((item) => item.kind === kind).map((item) => item.source);
}

/**
 * `source`'s references to `targets` (ids, keyed by `keyOf`), each made in the order above: the
 * reference item recorded, then the target touched on `condition`; a target that is gone or fails the
 * condition has its reference undone. Returns the targets refused.
 */
export async function referenceTargets(
  source: string,
  kind: ReferenceKind,
  targets: readonly string[],
  keyOf: (id: string) => TargetKey,
  condition: { expression: string; values: Record<string, unknown> },
): Promise<string[]> {
  const refused: string[] = [];
  for (const target of targets) {
    await recordReference(keyOf(target), kind, source);
    if (await touchTarget(keyOf(target), condition)) continue;
    await forgetReference(keyOf(target), kind, source);
    refused.push(target);
  }
  return refused;
}

/**
 * Touches a target after a reference to it was recorded: true when the target exists and satisfies
 * `condition` (e.g. `natsMode = :server`); its reference token changes, so a remover that read the
 * target before fails its conditional write.
 */
export function touchTarget(
  target: TargetKey,
  condition?: { expression: string; names?: Record<string, string>; values: Record<string, unknown> },
): Promise<boolean> {
  return conditionalWrite(
    new UpdateCommand({
      TableName: tableName(),
      Key: target,
      UpdateExpression: 'SET refToken = :token',
      ConditionExpression: `attribute_exists(PK)${condition ? ` AND (${condition.expression})` : ''}`,
      ...(condition?.names ? { ExpressionAttributeNames: condition.names } : {}),
      ExpressionAttributeValues: { ':token': randomUUID(), ...condition?.values },
    }),
  );
}

/**
 * The condition a remover (or changer) of a target adds to its write: the reference token is the one it
 * read (`undefined`: none yet). Returns the expression and its values, named `:refToken`.
 */
export function unchangedReferences(read: string | undefined): {
  expression: string;
  values: Record<string, unknown>;
} {
  return read === undefined
    ? { expression: 'attribute_not_exists(refToken)', values: {} }
    : { expression: 'refToken = :refToken', values: { ':refToken': read } };
}
