/**
 * When fogbridge renews what it issued, decided from dates alone. A certificate is due once it is within
 * the renewal window of its notAfter; it is renewed only if a renewal reaches further (a leaf never
 * outlives its CA, so a leaf whose CA ends first gains nothing: its CA is what is due). A CA fogbridge
 * made is rotated earlier, within twice the window, so that the rotation, which waits for every site at
 * each phase, is finished before its leaves fall due.
 */

const DAY_MS = 86_400_000;
/** A renewal that gains less than this is no renewal. */
const MIN_GAIN_MS = DAY_MS;

export interface Validity {
  validTo: string;
}

export type RenewalDecision =
  | { renew: true; until: string }
  | { renew: false; reason: 'not-due' | 'ca-ends-first' | 'ca-expired' | 'ca-rotating' };

/**
 * Whether to renew `leaf` at `now`, signed by `ca` (undefined: self-signed) for `lifetimeDays`, with
 * a window of `windowDays`.
 */
export function leafRenewal(input: {
  leaf: Validity;
  ca: (Validity & { rotating?: boolean }) | undefined;
  lifetimeDays: number;
  windowDays: number;
  now: number;
}): RenewalDecision {
  const { leaf, ca, lifetimeDays, windowDays, now } = input;
  const end = Date.parse(leaf.validTo);
  if (end - now > windowDays * DAY_MS) return { renew: false, reason: 'not-due' };
  // A rotation reissues every leaf of its CA itself.
  if (ca?.rotating) return { renew: false, reason: 'ca-rotating' };
  if (ca && Date.parse(ca.validTo) <= now) return { renew: false, reason: 'ca-expired' };
  const until = Math.min(now + lifetimeDays * DAY_MS, ca ? Date.parse(ca.validTo) : Number.POSITIVE_INFINITY);
  if (until - end < MIN_GAIN_MS) return { renew: false, reason: 'ca-ends-first' };
  return { renew: true, until: new Date(until).toISOString() };
}

/** Whether a CA fogbridge made is due for rotation at `now` (within twice the renewal window). */
export function caRotationDue(input: {
  ca: Validity & { rotating?: boolean };
  windowDays: number;
  now: number;
}): boolean {
  const { ca, windowDays, now } = input;
  return !ca.rotating && Date.parse(ca.validTo) - now <= 2 * windowDays * DAY_MS;
}
