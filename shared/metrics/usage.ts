import { AsyncLocalStorage } from 'node:async_hooks';
import { config } from '../context.js';

/**
 * Process-wide counters of the work fogbridge asks of DynamoDB and SQS. Filled only when
 * FOGBRIDGE_METER_USAGE=true (the benchmark turns it on), read by `npm run bench`.
 */
export interface Usage {
  dynamodbReadUnits: number;
  dynamodbWriteUnits: number;
  dynamodbCalls: Record<string, number>;
  sqsMessagesSent: number;
  /** Router reconciles that computed (not skipped as already covered). */
  routerReconciles: number;
  /** Writes of the hub document (router config item or the operator's ConfigMap). */
  hubWrites: number;
  /** Time spent per named step, summed over all calls, and the number of calls. */
  steps: Record<string, { totalMs: number; calls: number }>;
  /**
   * Store and queue calls, and DynamoDB read units, inside each kind of operation (`create service`,
   * `service reconcile`, `fog reconcile`).
   */
  operations: Record<string, { count: number; calls: number; maxCalls: number; readUnits: number }>;
}

export const usage: Usage = {
  dynamodbReadUnits: 0,
  dynamodbWriteUnits: 0,
  dynamodbCalls: {},
  sqsMessagesSent: 0,
  routerReconciles: 0,
  hubWrites: 0,
  steps: {},
  operations: {},
};

export function metering(): boolean {
  return config().meterUsage;
}

export function resetUsage(): void {
  usage.dynamodbReadUnits = 0;
  usage.dynamodbWriteUnits = 0;
  usage.dynamodbCalls = {};
  usage.sqsMessagesSent = 0;
  usage.routerReconciles = 0;
  usage.hubWrites = 0;
  usage.steps = {};
  usage.operations = {};
}

/** Two threads' counters as one (the embedded runtime's API thread and its workers thread). */
export function addUsage(a: Usage, b: Usage): Usage {
  const sum = (x: Record<string, number>, y: Record<string, number>) => {
    const out = { ...x };
    for (const [key, value] of Object.entries(y)) out[key] = (out[key] ?? 0) + value;
    return out;
  };
  const steps = { ...a.steps };
  for (const [name, step] of Object.entries(b.steps)) {
    const into = steps[name] ?? { totalMs: 0, calls: 0 };
    steps[name] = { totalMs: into.totalMs + step.totalMs, calls: into.calls + step.calls };
  }
  const operations = { ...a.operations };
  for (const [kind, entry] of Object.entries(b.operations)) {
    const into = operations[kind] ?? { count: 0, calls: 0, maxCalls: 0, readUnits: 0 };
    operations[kind] = {
      count: into.count + entry.count,
      calls: into.calls + entry.calls,
      maxCalls: Math.max(into.maxCalls, entry.maxCalls),
      readUnits: into.readUnits + entry.readUnits,
    };
  }
  return {
    dynamodbReadUnits: a.dynamodbReadUnits + b.dynamodbReadUnits,
    dynamodbWriteUnits: a.dynamodbWriteUnits + b.dynamodbWriteUnits,
    dynamodbCalls: sum(a.dynamodbCalls, b.dynamodbCalls),
    sqsMessagesSent: a.sqsMessagesSent + b.sqsMessagesSent,
    routerReconciles: a.routerReconciles + b.routerReconciles,
    hubWrites: a.hubWrites + b.hubWrites,
    steps,
    operations,
  };
}

const operationScope = new AsyncLocalStorage<{ calls: number; readUnits: number }>();

/**
 * Runs `work` as one operation of `kind`, counting the DynamoDB and SQS calls made inside it (when
 * metering): what `npm run bench` reports as calls per create and per fog reconcile.
 */
export async function countOperation<T>(kind: string, work: () => Promise<T>): Promise<T> {
  if (!metering()) return work();
  const scope = { calls: 0, readUnits: 0 };
  try {
    return await operationScope.run(scope, work);
  } finally {
    const entry = usage.operations[kind] ?? { count: 0, calls: 0, maxCalls: 0, readUnits: 0 };
    entry.count += 1;
    entry.calls += scope.calls;
    entry.readUnits += scope.readUnits;
    entry.maxCalls = Math.max(entry.maxCalls, scope.calls);
    usage.operations[kind] = entry;
  }
}

/** Counts one store or queue call in the operation it belongs to, if any. */
export function recordServiceCall(): void {
  const scope = operationScope.getStore();
  if (scope) scope.calls += 1;
}

/** Runs `work`, adding its duration to step `name` when metering. */
export async function timeStep<T>(name: string, work: () => Promise<T>): Promise<T> {
  if (!metering()) return work();
  const started = performance.now();
  try {
    return await work();
  } finally {
    const step = usage.steps[name] ?? { totalMs: 0, calls: 0 };
    step.totalMs += performance.now() - started;
    step.calls += 1;
    usage.steps[name] = step;
  }
}

// The names the client's middleware sees: the low-level commands the document client sends.
const READS = new Set([
  'GetItemCommand',
  'BatchGetItemCommand',
  'QueryCommand',
  'ScanCommand',
  'GetCommand',
  'BatchGetCommand',
]);

/** Records one DynamoDB call and the capacity DynamoDB reported for it. */
export function recordDynamoDbCall(commandName: string, consumed: unknown): void {
  usage.dynamodbCalls[commandName] = (usage.dynamodbCalls[commandName] ?? 0) + 1;
  recordServiceCall();
  const entries = Array.isArray(consumed) ? consumed : consumed ? [consumed] : [];
  for (const entry of entries as { CapacityUnits?: number }[]) {
    const units = Number(entry.CapacityUnits ?? 0);
    if (READS.has(commandName)) {
      usage.dynamodbReadUnits += units;
      const scope = operationScope.getStore();
      if (scope) scope.readUnits += units;
    } else usage.dynamodbWriteUnits += units;
  }
}
