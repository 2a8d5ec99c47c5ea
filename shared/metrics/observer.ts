/**
 * What an operation observer is told (see operations.ts, where operations are measured): the figures of
 * each operation and each call, and the named steps. Types only, shared by the context that holds an
 * observer and the observers themselves.
 */

/** What one operation cost. */
export interface OperationFigures {
  /** DynamoDB and SQS calls made inside it. */
  calls: number;
  /**
   * The longest chain of those calls made one after another (each started after the one before it had
   * answered): the round trips a caller waits for when every call crosses a network. Calls made side by
   * side count once.
   */
  sequentialCalls: number;
  /** DynamoDB read and write capacity units its calls consumed, as DynamoDB reported them. */
  readUnits: number;
  writeUnits: number;
  /** SQS messages it sent. */
  messages: number;
  durationMs: number;
  /** Events counted inside it (`router reconcile`, `hub write`), by name. */
  events: Record<string, number>;
}

/** One DynamoDB or SQS call, as the client's middleware saw it. */
export interface CallFigures {
  service: 'dynamodb' | 'sqs';
  /** The command's name (`GetItemCommand`, `SendMessageBatchCommand`, ...). */
  command: string;
  readUnits: number;
  writeUnits: number;
  messages: number;
}

export interface OperationObserver {
  operation(kind: string, figures: OperationFigures): void;
  call(figures: CallFigures): void;
  /** A named step inside an operation took `durationMs`. */
  step(name: string, durationMs: number): void;
}

/** Events worth counting: a router's entries computed (not skipped as covered), the hub document written. */
export type CountedEvent = 'router reconcile' | 'hub write';
