import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { conditionalWrite, documentClient, keys, tableName } from './client.js';

/**
 * What reconcile may have left behind for one service or agent outside its own row: the tokens it wrote
 * to the distribution-token index and the routers it asked to hold the service. Kept in an item of its
 * own, changed only by atomic set additions and removals, so that neither a row rewritten from a stale
 * read nor a reconcile whose final row write lost a race can make it forget anything. The rule is
 * intent first: a token or router is added here before it is written or asked, and removed only after
 * its index entry is gone or the router was asked to drop the service. So this set is always a superset
 * of what exists, and the next reconcile cleans whatever an interrupted one left.
 */
export interface Applied {
  tokens: string[];
  routers: string[];
  /**
   * Set before a service's distribution-set listener is changed and cleared once every agent that
   * selects it was told: a reconcile interrupted in between tells them again.
   */
  selectionPending?: true;
}

export type AppliedOwner = { service: string } | { agent: string };

// An agent's is kept on its router's request record: the request that an agent change sends records the
// tokens the agent's new tags select in the same write, so its fog reconcile has no intent to write first.
const keyOf = (owner: AppliedOwner) =>
  'service' in owner ? keys.applied(`SVC#${owner.service}`) : keys.routerRequests(owner.agent);

const listOf = (value: unknown): string[] => (value instanceof Set ? [...value].map(String).sort() : []);

export async function getApplied(owner: AppliedOwner): Promise<Applied> {
  const { Item } = await documentClient().send(
    new GetCommand({ TableName: tableName(), Key: keyOf(owner), ConsistentRead: true }),
  );
  return {
    tokens: listOf(Item?.tokens),
    routers: listOf(Item?.routers),
    ...(Item?.selectionPending ? { selectionPending: true as const } : {}),
  };
}

/**
 * Adds (`ADD`) or removes (`DELETE`) set members and, in the same write, sets (`mark`) or clears
 * (`clear`) the selection-pending mark; empty parts are left out (DynamoDB has no empty sets).
 */
async function changeSets(
  owner: AppliedOwner,
  action: 'ADD' | 'DELETE',
  change: Partial<Applied>,
  selectionPending?: 'mark' | 'clear',
) {
  const parts = (['tokens', 'routers'] as const).filter((part) => (change[part]?.length ?? 0) > 0);
  if (parts.length === 0 && !selectionPending) return;
  const clauses = [
    ...(parts.length > 0 ? [`${action} ${parts.map((part) => `#${part} :${part}`).join(', ')}`] : []),
    ...(selectionPending === 'mark' ? ['SET selectionPending = :yes'] : []),
    ...(selectionPending === 'clear' ? ['REMOVE selectionPending'] : []),
  ];
  const values = {
    ...Object.fromEntries(parts.map((part) => [`:${part}`, new Set(change[part])])),
    ...(selectionPending === 'mark' ? { ':yes': true } : {}),
  };
  await documentClient().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keyOf(owner),
      UpdateExpression: clauses.join(' '),
      ...(parts.length > 0
        ? { ExpressionAttributeNames: Object.fromEntries(parts.map((part) => [`#${part}`, part])) }
        : {}),
      ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
    }),
  );
}

/**
 * Records intent: these tokens are about to be indexed, these routers about to be asked (and, with
 * `markSelectionPending`, the service's selected listener about to change).
 */
export function recordApplied(
  owner: AppliedOwner,
  added: Partial<Applied>,
  options: { markSelectionPending?: boolean } = {},
): Promise<void> {
  return changeSets(owner, 'ADD', added, options.markSelectionPending ? 'mark' : undefined);
}

/**
 * Forgets what is cleaned up: index entries deleted, routers asked to drop the service; with
 * `clearSelectionPending`, also the pending selection change, once every selecting agent was told.
 */
export function forgetApplied(
  owner: AppliedOwner,
  removed: Partial<Applied>,
  options: { clearSelectionPending?: boolean } = {},
): Promise<void> {
  return changeSets(owner, 'DELETE', removed, options.clearSelectionPending ? 'clear' : undefined);
}

/**
 * Deletes a service's item once nothing is left in it (a set emptied by DELETE disappears). An agent's
 * sets are attributes of its request record, which stays.
 */
export async function removeAppliedIfEmpty(owner: { service: string }): Promise<void> {
  await conditionalWrite(
    new DeleteCommand({
      TableName: tableName(),
      Key: keyOf(owner),
      ConditionExpression:
        'attribute_not_exists(#tokens) AND attribute_not_exists(#routers) AND attribute_not_exists(selectionPending)',
      ExpressionAttributeNames: { '#tokens': 'tokens', '#routers': 'routers' },
    }),
  );
}
