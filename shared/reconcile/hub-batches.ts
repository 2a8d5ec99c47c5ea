import { type BatchScope, currentBatchScope, everyRecordWaiting, waitingOn } from '../batch-scope.js';

/**
 * Hub writes in batches. Every service reconcile writes its entries on the hub under the hub lock, so
 * the hub is where a burst of services queues. Within one process, the asks for one hub join a batch,
 * and one lock hold writes the whole batch: a queue batch's records (run side by side) join until each
 * of them is waiting on the hub or done, and what arrives while a batch is written joins the next.
 * Each batch is computed afresh under the lock from what is stored, so nothing is written from a stale
 * read; an ask fails with its batch (its message is retried, as it would be alone). An ask from outside
 * a queue batch, or one that has waited `GATHER_LIMIT_MS`, starts its batch at once.
 */

/** How long an ask waits for the rest of its queue batch at most (a record slow to get there). */
const GATHER_LIMIT_MS = 500;

interface Ask<A, R> {
  ask: A;
  scope: BatchScope | undefined;
  since: number;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

interface Queue<A, R> {
  waiting: Ask<A, R>[];
  writing: boolean;
  timer?: ReturnType<typeof setTimeout>;
  identity: (ask: A) => string;
  write: (asks: A[]) => Promise<R[]>;
  /** Re-checks whether a batch may start (registered on each waiting ask's scope). */
  check: () => void;
}

const queues = new Map<string, Queue<unknown, unknown>>();

/**
 * Joins `ask` to the next batch for `key`. `identity` says which asks are for the same thing: only one
 * of those goes in a batch (a later one waits for the next), so a batch never writes one thing twice.
 * `write` runs a batch and answers each of its asks, in order.
 */
export function inNextBatch<A, R>(
  key: string,
  ask: A,
  identity: (ask: A) => string,
  write: (asks: A[]) => Promise<R[]>,
): Promise<R> {
  let queue = queues.get(key) as Queue<A, R> | undefined;
  if (!queue) {
    const created: Queue<A, R> = {
      waiting: [],
      writing: false,
      identity,
      write,
      check: () => maybeStart(key, created),
    };
    queue = created;
    queues.set(key, queue as Queue<unknown, unknown>);
  }
  const scope = currentBatchScope();
  const answer = new Promise<R>((resolve, reject) =>
    queue.waiting.push({ ask, scope, since: Date.now(), resolve, reject }),
  );
  scope?.changed.add(queue.check);
  const waited = waitingOn(scope, answer);
  maybeStart(key, queue);
  return waited;
}

/** Starts a batch when no write runs and some waiting ask's batch has nothing more coming. */
function maybeStart<A, R>(key: string, queue: Queue<A, R>): void {
  if (queue.writing || queue.waiting.length === 0) return;
  const now = Date.now();
  const ready = queue.waiting.some(
    (waiting) =>
      !waiting.scope || everyRecordWaiting(waiting.scope) || now - waiting.since >= GATHER_LIMIT_MS,
  );
  if (!ready) {
    queue.timer ??= setTimeout(() => {
      queue.timer = undefined;
      maybeStart(key, queue);
    }, GATHER_LIMIT_MS);
    return;
  }
  if (queue.timer) clearTimeout(queue.timer);
  queue.timer = undefined;
  void writeBatch(key, queue);
}

async function writeBatch<A, R>(key: string, queue: Queue<A, R>): Promise<void> {
  queue.writing = true;
  const seen = new Set<string>();
  const batch: Ask<A, R>[] = [];
  const later: Ask<A, R>[] = [];
  for (const waiting of queue.waiting) {
    const id = queue.identity(waiting.ask);
    (seen.has(id) ? later : batch).push(waiting);
    seen.add(id);
  }
  queue.waiting = later;
  try {
    const results = await queue.write(batch.map((entry) => entry.ask));
    for (const [index, entry] of batch.entries()) entry.resolve(results[index]!);
  } catch (error) {
    for (const entry of batch) entry.reject(error);
  } finally {
    for (const entry of batch) entry.scope?.changed.delete(queue.check);
    for (const entry of queue.waiting) entry.scope?.changed.add(queue.check);
    queue.writing = false;
    if (queue.waiting.length === 0 && queues.get(key) === queue) queues.delete(key);
    else maybeStart(key, queue);
  }
}
