import { AsyncLocalStorage } from 'node:async_hooks';
import { batchGetItems } from './client.js';

/** An item as the document client reads and writes it (the middleware runs before marshalling). */
type StoredItem = Record<string, unknown>;

interface Snapshot {
  /** Items by key as the store returned them; null for a key read and found absent. */
  items: Map<string, StoredItem | null>;
  /** While the snapshot's own batch read runs, its answers fill `items`. */
  filling: boolean;
}

const snapshotScope = new AsyncLocalStorage<Snapshot>();

const keyString = (key: StoredItem | undefined) => (key ? `${String(key.PK)}\u0000${String(key.SK)}` : '');

/**
 * Runs `work` with the items at `itemKeys` read up front in one consistent batch: a GetItem of one of
 * them inside `work` is answered from that read instead of a call of its own. A write to one of them
 * keeps the snapshot true: a put that succeeded becomes the item read, any other write (or a put that
 * failed, say a lost conditional create) drops it, so the next read goes to the store. Other keys are
 * untouched. A reconcile that would otherwise read its twenty inputs one call at a time reads them in
 * one; reading them a little earlier changes nothing, since every write it makes is conditioned on what
 * it read or owned by it alone.
 */
export async function withReadSnapshot<T>(
  itemKeys: readonly { PK: string; SK: string }[],
  work: () => Promise<T>,
): Promise<T> {
  const snapshot: Snapshot = { items: new Map(), filling: true };
  return snapshotScope.run(snapshot, async () => {
    await batchGetItems(itemKeys);
    snapshot.filling = false;
    return work();
  });
}

/** Runs `work` reading the store itself even inside a snapshot: a re-check that must see other writers. */
export function outsideReadSnapshot<T>(work: () => Promise<T>): Promise<T> {
  return snapshotScope.exit(work);
}

type Handler = (args: { input: object }) => Promise<{ output: object; response: unknown }>;

/**
 * The store client's middleware serving reads from the current snapshot (see withReadSnapshot); it
 * sits outside the usage meter, so a read answered here is not counted as a call.
 */
export function snapshotMiddleware(next: Handler, context: { commandName?: string }): Handler {
  return async (args) => {
    const snapshot = snapshotScope.getStore();
    if (!snapshot) return next(args);
    const input = args.input as {
      Key?: StoredItem;
      Item?: StoredItem;
      RequestItems?: Record<string, { Keys?: StoredItem[] }>;
    };
    switch (context.commandName) {
      case 'BatchGetItemCommand': {
        const result = await next(args);
        if (snapshot.filling) fillSnapshot(snapshot, input.RequestItems, result.output);
        return result;
      }
      case 'GetItemCommand': {
        const key = keyString(input.Key);
        if (!snapshot.items.has(key)) return next(args);
        const item = snapshot.items.get(key);
        // A copy: the caller may change what it was given.
        return {
          output: { $metadata: {}, ...(item ? { Item: structuredClone(item) } : {}) },
          response: undefined,
        };
      }
      case 'PutItemCommand':
      case 'UpdateItemCommand':
      case 'DeleteItemCommand': {
        const key = keyString(input.Key ?? input.Item);
        if (!snapshot.items.has(key)) return next(args);
        snapshot.items.delete(key);
        const result = await next(args);
        if (context.commandName === 'PutItemCommand') snapshot.items.set(key, structuredClone(input.Item!));
        return result;
      }
      default:
        return next(args);
    }
  };
}

function fillSnapshot(
  snapshot: Snapshot,
  requested: Record<string, { Keys?: StoredItem[] }> | undefined,
  output: object,
): void {
  const { Responses, UnprocessedKeys } = output as {
    Responses?: Record<string, StoredItem[]>;
    UnprocessedKeys?: Record<string, { Keys?: StoredItem[] }>;
  };
  const unprocessed = new Set(
    Object.values(UnprocessedKeys ?? {}).flatMap((table) => (table.Keys ?? []).map(keyString)),
  );
  for (const table of Object.values(requested ?? {}))
    for (const key of table.Keys ?? [])
      if (!unprocessed.has(keyString(key))) snapshot.items.set(keyString(key), null);
  for (const items of Object.values(Responses ?? {}))
    for (const item of items) snapshot.items.set(keyString(item), item);
}
