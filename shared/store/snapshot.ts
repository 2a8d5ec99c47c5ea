import { AsyncLocalStorage } from 'node:async_hooks';

/** An item as the document client reads and writes it (the middleware runs before marshalling). */
type StoredItem = Record<string, unknown>;

interface Snapshot {
  /** Items by key as the store returned them; null for a key read and found absent. */
  items: Map<string, StoredItem | null>;
  /** While the snapshot's own batch read runs, its answers fill `items`. */
  filling: boolean;
  /** The snapshot this one was opened inside: a key it lacks is looked up there. */
  parent: Snapshot | undefined;
}

const snapshotScope = new AsyncLocalStorage<Snapshot>();

const keyString = (key: StoredItem | undefined) => (key ? `${String(key.PK)}\u0000${String(key.SK)}` : '');

/**
 * Runs `work` with the items at `itemKeys` read up front by `read` (one consistent batch read through
 * the store's client, whose middleware fills the snapshot with its answers; see read-snapshot.ts): a GetItem of one of
 * them inside `work` is answered from that read instead of a call of its own. A write to one of them
 * keeps the snapshot true: a put that succeeded (alone or in a batch write) becomes the item read, a
 * batch delete makes it absent, any other write (or a put that failed, say a lost conditional create)
 * drops it, so the next read goes to the store. Other keys are
 * untouched. A reconcile that would otherwise read its twenty inputs one call at a time reads them in
 * one; reading them a little earlier changes nothing, since every write it makes is conditioned on what
 * it read or owned by it alone.
 */
export async function openReadSnapshot<T>(
  itemKeys: readonly { PK: string; SK: string }[],
  read: (itemKeys: readonly { PK: string; SK: string }[]) => Promise<unknown>,
  work: () => Promise<T>,
  options: { onReadFailed?: (error: unknown) => void } = {},
): Promise<T> {
  const parent = snapshotScope.getStore();
  const snapshot: Snapshot = { items: new Map(), filling: true, parent };
  // Keys an enclosing snapshot read are answered from it: only the others are read now.
  const unread = parent
    ? itemKeys.filter((key) => lookUp(snapshotChain(parent), keyString(key)) === undefined)
    : itemKeys;
  return snapshotScope.run(snapshot, async () => {
    try {
      if (unread.length > 0) await read(unread);
    } catch (error) {
      // With `onReadFailed` the read is only an optimisation: `work` reads for itself instead.
      if (!options.onReadFailed) throw error;
      options.onReadFailed(error);
      snapshot.items.clear();
    }
    snapshot.filling = false;
    return work();
  });
}

/** The snapshots in force, innermost first. */
function snapshotChain(innermost: Snapshot): Snapshot[] {
  const chain: Snapshot[] = [];
  for (let snapshot: Snapshot | undefined = innermost; snapshot; snapshot = snapshot.parent)
    chain.push(snapshot);
  return chain;
}

/** The item read for `key` by the innermost snapshot that read it (null: read and absent). */
function lookUp(chain: readonly Snapshot[], key: string): StoredItem | null | undefined {
  for (const snapshot of chain) if (snapshot.items.has(key)) return snapshot.items.get(key);
  return undefined;
}

/**
 * Whether the snapshots in force read `key` and found it absent (and nothing wrote it since): true only
 * then, with no call. False when it was found, or when no snapshot knows it.
 */
export function knownAbsent(key: { PK: string; SK: string }): boolean {
  const snapshot = snapshotScope.getStore();
  return !!snapshot && lookUp(snapshotChain(snapshot), keyString(key)) === null;
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
    const chain = snapshotChain(snapshot);
    switch (context.commandName) {
      case 'BatchGetItemCommand': {
        if (snapshot.filling) {
          const result = await next(args);
          fillSnapshot(snapshot, input.RequestItems, result.output);
          return result;
        }
        // Served whole from the snapshots when they read every key (a full consistent read of each).
        const tables = Object.entries(input.RequestItems ?? {});
        const requested = tables.flatMap(([, table]) => table.Keys ?? []).map(keyString);
        const plain = tables.every(([, table]) => !('ProjectionExpression' in table));
        if (!plain || requested.some((key) => lookUp(chain, key) === undefined)) return next(args);
        const Responses = Object.fromEntries(
          tables.map(([table, { Keys }]) => [
            table,
            (Keys ?? [])
              .map((key) => lookUp(chain, keyString(key)))
              .filter((item): item is StoredItem => !!item)
              .map((item) => copyOf(item)),
          ]),
        );
        return { output: { $metadata: {}, Responses, UnprocessedKeys: {} }, response: undefined };
      }
      case 'GetItemCommand': {
        const item = lookUp(chain, keyString(input.Key));
        if (item === undefined) return next(args);
        // A copy: the caller may change what it was given.
        return {
          output: { $metadata: {}, ...(item ? { Item: copyOf(item) } : {}) },
          response: undefined,
        };
      }
      case 'PutItemCommand':
      case 'UpdateItemCommand':
      case 'DeleteItemCommand': {
        const key = keyString(input.Key ?? input.Item);
        const holders = chain.filter((held) => held.items.has(key));
        if (holders.length === 0) return next(args);
        for (const held of holders) held.items.delete(key);
        const result = await next(args);
        if (context.commandName === 'PutItemCommand')
          for (const held of holders) held.items.set(key, copyOf(input.Item!));
        return result;
      }
      case 'BatchWriteItemCommand': {
        // Unconditional puts and deletes: a held key is what was written once the store took it (put:
        // the item, delete: absent), and dropped (read again when asked for) if it did not.
        const writes = Object.values(
          (args.input as { RequestItems?: Record<string, BatchWriteRequest[]> }).RequestItems ?? {},
        ).flat();
        const holders = new Map<string, Snapshot[]>();
        for (const write of writes) {
          const key = keyString(write.PutRequest?.Item ?? write.DeleteRequest?.Key);
          const held = chain.filter((snapshot) => snapshot.items.has(key));
          for (const snapshot of held) snapshot.items.delete(key);
          if (held.length > 0) holders.set(key, held);
        }
        const result = await next(args);
        const unprocessed = new Set(
          Object.values(
            (result.output as { UnprocessedItems?: Record<string, BatchWriteRequest[]> }).UnprocessedItems ??
              {},
          )
            .flat()
            .map((write) => keyString(write.PutRequest?.Item ?? write.DeleteRequest?.Key)),
        );
        for (const write of writes) {
          const key = keyString(write.PutRequest?.Item ?? write.DeleteRequest?.Key);
          if (unprocessed.has(key)) continue;
          const item = write.PutRequest ? copyOf(write.PutRequest.Item) : null;
          for (const snapshot of holders.get(key) ?? []) snapshot.items.set(key, item);
        }
        return result;
      }
      default:
        return next(args);
    }
  };
}

/**
 * A deep copy of an item as the document client gives it (objects, arrays, sets, binary, scalars): the
 * caller may change what it was given. Cheaper than structuredClone, which serialises.
 */
function copyOf<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(copyOf) as T;
  if (value instanceof Set) return new Set([...value].map(copyOf)) as T;
  if (value instanceof Uint8Array) return value.slice() as T;
  const copy: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(value)) copy[name] = copyOf(field);
  return copy as T;
}

interface BatchWriteRequest {
  PutRequest?: { Item: StoredItem };
  DeleteRequest?: { Key: StoredItem };
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
