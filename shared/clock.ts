import { currentContext } from './context.js';

/**
 * The time it is for every decision that depends on it (a certificate's validity, what is due for
 * renewal, how long a rollout has waited): the real time, unless whoever built the running context
 * gave it a clock of its own.
 */
export function nowMs(): number {
  return currentContext().hooks.clock?.() ?? Date.now();
}

export function now(): Date {
  return new Date(nowMs());
}
