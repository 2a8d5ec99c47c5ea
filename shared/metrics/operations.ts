import { AsyncLocalStorage } from 'node:async_hooks';
import { currentContext } from '../context.js';
import type { CallFigures, CountedEvent, OperationFigures, OperationObserver } from './observer.js';

export type { CallFigures, CountedEvent, OperationFigures, OperationObserver };

/**
 * What fogbridge measures of its own work, in one place: each operation (an API route, a queue record,
 * a sweep) with the DynamoDB and SQS calls made inside it, and the events inside it worth counting.
 * Where the figures go is the context's observer: CloudWatch metrics in Lambda (see cloudwatch.ts), the
 * embedded runtime's counters when it is given one, nowhere without one (then nothing is measured).
 */

type Scope = Omit<OperationFigures, 'durationMs'> & {
  /** The longest chain among the calls that have answered so far (a call started now would extend it). */
  answeredChain: number;
};

const operationScope = new AsyncLocalStorage<Scope>();

function observer(): OperationObserver | undefined {
  return currentContext().hooks.observer;
}

/** Runs `work` as one operation of `kind`, measured when the context has an observer. */
export async function observeOperation<T>(kind: string, work: () => Promise<T>): Promise<T> {
  const sink = observer();
  if (!sink) return work();
  const scope: Scope = {
    calls: 0,
    sequentialCalls: 0,
    answeredChain: 0,
    readUnits: 0,
    writeUnits: 0,
    messages: 0,
    events: {},
  };
  const started = performance.now();
  try {
    return await operationScope.run(scope, work);
  } finally {
    const { answeredChain: _, ...figures } = scope;
    sink.operation(kind, { ...figures, durationMs: performance.now() - started });
  }
}

/** Runs `work` as the named step of the operation it belongs to. */
export async function observeStep<T>(name: string, work: () => Promise<T>): Promise<T> {
  const sink = observer();
  if (!sink) return work();
  const started = performance.now();
  try {
    return await work();
  } finally {
    sink.step(name, performance.now() - started);
  }
}

/** Counts `event` in the operation it happens in. */
export function countEvent(event: CountedEvent): void {
  const scope = operationScope.getStore();
  if (scope) scope.events[event] = (scope.events[event] ?? 0) + 1;
}

// The low-level commands a DynamoDB document client sends that read.
const READS = new Set([
  'GetItemCommand',
  'BatchGetItemCommand',
  'QueryCommand',
  'ScanCommand',
  'GetCommand',
  'BatchGetCommand',
]);

function capacityUnits(consumed: unknown): number {
  const entries = Array.isArray(consumed) ? consumed : consumed ? [consumed] : [];
  return (entries as { CapacityUnits?: number }[]).reduce(
    (sum, entry) => sum + Number(entry.CapacityUnits ?? 0),
    0,
  );
}

/**
 * Runs one call inside the current operation and adds it up, answered or refused (a failed conditional
 * write is a round trip too). A call's place in a chain is one more than the longest chain that had
 * answered when it started: calls started side by side share a place.
 */
async function measured<T>(
  call: () => Promise<T>,
  figuresOf: (result: T | undefined) => CallFigures,
): Promise<T> {
  const scope = operationScope.getStore();
  const place = (scope?.answeredChain ?? 0) + 1;
  let result: T | undefined;
  try {
    result = await call();
    return result;
  } finally {
    const figures = figuresOf(result);
    observer()?.call(figures);
    if (scope) {
      scope.calls += 1;
      scope.answeredChain = Math.max(scope.answeredChain, place);
      scope.sequentialCalls = Math.max(scope.sequentialCalls, place);
      scope.readUnits += figures.readUnits;
      scope.writeUnits += figures.writeUnits;
      scope.messages += figures.messages;
    }
  }
}

interface MiddlewareHost {
  middlewareStack: {
    add(
      middleware: (
        next: (args: { input: unknown }) => Promise<{ output: unknown }>,
        context: { commandName?: string },
      ) => (args: { input: unknown }) => Promise<{ output: unknown }>,
      options: { step: 'initialize'; name: string },
    ): void;
  };
}

/**
 * Measures every call of an AWS client, when the context has an observer: DynamoDB is asked for the
 * capacity each call consumed (`ReturnConsumedCapacity`), SQS calls count the messages they send.
 */
export function measureCalls(client: unknown, service: CallFigures['service']): void {
  if (!observer()) return;
  (client as MiddlewareHost).middlewareStack.add(
    (next, context) => (args) => {
      const command = String(context.commandName);
      if (service === 'sqs') {
        const entries = (args.input as { Entries?: unknown[] }).Entries;
        const messages =
          command === 'SendMessageCommand'
            ? 1
            : command === 'SendMessageBatchCommand'
              ? (entries?.length ?? 0)
              : 0;
        return measured(
          () => next(args),
          () => ({ service, command, readUnits: 0, writeUnits: 0, messages }),
        );
      }
      (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'TOTAL';
      return measured(
        () => next(args),
        (result) => {
          const units = capacityUnits((result?.output as { ConsumedCapacity?: unknown })?.ConsumedCapacity);
          const reads = READS.has(command);
          return {
            service,
            command,
            readUnits: reads ? units : 0,
            writeUnits: reads ? 0 : units,
            messages: 0,
          };
        },
      );
    },
    { step: 'initialize', name: 'fogbridgeCallMeasure' },
  );
}
