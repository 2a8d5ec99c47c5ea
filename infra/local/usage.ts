import type { OperationObserver } from '../../shared/metrics/operations.js';

/**
 * The embedded runtime's running totals of what the product measured (shared/metrics/operations.ts),
 * one set per thread: what `npm run bench` reads and resets. Filled only in a runtime started with
 * `measureOperations`.
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
   * Store and queue calls, and DynamoDB read units, inside each kind of operation (an API route such as
   * `POST /api/v3/services`, `service reconcile`, `fog reconcile`).
   */
  operations: Record<string, OperationTotals>;
}

/** One kind of operation's figures added up: how many ran, their calls, round trips in sequence, read units. */
export interface OperationTotals {
  count: number;
  calls: number;
  maxCalls: number;
  sequentialCalls: number;
  maxSequentialCalls: number;
  readUnits: number;
}

const noOperations = (): OperationTotals => ({
  count: 0,
  calls: 0,
  maxCalls: 0,
  sequentialCalls: 0,
  maxSequentialCalls: 0,
  readUnits: 0,
});

export const usage: Usage = emptyUsage();

function emptyUsage(): Usage {
  return {
    dynamodbReadUnits: 0,
    dynamodbWriteUnits: 0,
    dynamodbCalls: {},
    sqsMessagesSent: 0,
    routerReconciles: 0,
    hubWrites: 0,
    steps: {},
    operations: {},
  };
}

export function resetUsage(): void {
  Object.assign(usage, emptyUsage());
}

/** Adds what the product measures to `usage`. */
export function usageObserver(): OperationObserver {
  return {
    operation(kind, figures) {
      const entry = usage.operations[kind] ?? noOperations();
      entry.count += 1;
      entry.calls += figures.calls;
      entry.sequentialCalls += figures.sequentialCalls;
      entry.readUnits += figures.readUnits;
      entry.maxCalls = Math.max(entry.maxCalls, figures.calls);
      entry.maxSequentialCalls = Math.max(entry.maxSequentialCalls, figures.sequentialCalls);
      usage.operations[kind] = entry;
      usage.routerReconciles += figures.events['router reconcile'] ?? 0;
      usage.hubWrites += figures.events['hub write'] ?? 0;
    },
    call(figures) {
      if (figures.service === 'dynamodb') {
        usage.dynamodbCalls[figures.command] = (usage.dynamodbCalls[figures.command] ?? 0) + 1;
        usage.dynamodbReadUnits += figures.readUnits;
        usage.dynamodbWriteUnits += figures.writeUnits;
      } else usage.sqsMessagesSent += figures.messages;
    },
    step(name, durationMs) {
      const step = usage.steps[name] ?? { totalMs: 0, calls: 0 };
      step.totalMs += durationMs;
      step.calls += 1;
      usage.steps[name] = step;
    },
  };
}

/** Two threads' counters as one (the embedded runtime's API thread and its workers threads). */
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
    const into = operations[kind] ?? noOperations();
    operations[kind] = {
      count: into.count + entry.count,
      calls: into.calls + entry.calls,
      maxCalls: Math.max(into.maxCalls, entry.maxCalls),
      sequentialCalls: into.sequentialCalls + entry.sequentialCalls,
      maxSequentialCalls: Math.max(into.maxSequentialCalls, entry.maxSequentialCalls),
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
