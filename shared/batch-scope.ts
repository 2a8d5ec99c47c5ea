import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The records of one queue batch that run side by side (see queue/worker.ts, `groupsInParallel`). Code
 * that can serve several of them with one piece of work (the hub writer, reconcile/hub-batches.ts) asks
 * whether every record of the batch that is running is waiting on it: then nothing more is coming from
 * this batch, and the work is done for all of them at once.
 */
export interface BatchScope {
  /** Records started and not finished. */
  running: number;
  /** Of those, the ones waiting on shared work. */
  waiting: number;
  /** Called whenever a record starts, finishes, or starts or stops waiting. */
  changed: Set<() => void>;
}

const storage = new AsyncLocalStorage<BatchScope>();

export function newBatchScope(): BatchScope {
  return { running: 0, waiting: 0, changed: new Set() };
}

function notify(scope: BatchScope): void {
  for (const listener of [...scope.changed]) listener();
}

/** Runs one record of the batch within its scope. */
export async function runRecord<T>(scope: BatchScope, record: () => Promise<T>): Promise<T> {
  scope.running += 1;
  try {
    return await storage.run(scope, record);
  } finally {
    scope.running -= 1;
    notify(scope);
  }
}

/** The batch the calling record belongs to, if it runs in one. */
export function currentBatchScope(): BatchScope | undefined {
  return storage.getStore();
}

/** Whether every running record of the batch is waiting on shared work. */
export function everyRecordWaiting(scope: BatchScope): boolean {
  return scope.waiting >= scope.running;
}

/** Counts the calling record as waiting while `answer` is pending. */
export async function waitingOn<T>(scope: BatchScope | undefined, answer: Promise<T>): Promise<T> {
  if (!scope) return answer;
  scope.waiting += 1;
  notify(scope);
  try {
    return await answer;
  } finally {
    scope.waiting -= 1;
  }
}
