import type { ScheduledEvent } from 'aws-lambda';
import { type SweepResult, sweep } from '../../shared/reconcile/sweeper.js';

/** EventBridge schedule: re-drive lagging services and agents, free orphaned port claims. */
export const handler = (_event: ScheduledEvent): Promise<SweepResult> => sweep({ full: false });
