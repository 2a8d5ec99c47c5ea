import type { ScheduledEvent } from 'aws-lambda';
import { observeOperation } from '../../shared/metrics/operations.js';
import { type SweepResult, sweep } from '../../shared/reconcile/sweeper.js';

/** EventBridge schedule: re-drive lagging services and agents, free orphaned port claims. */
export const handler = (_event: ScheduledEvent): Promise<SweepResult> =>
  observeOperation('sweep', () => sweep({ full: false }));
