import type { TcpListener } from '../domain/router-objects.js';
import { setAgentTokens } from './agents.js';
import { type Applied, type AppliedOwner, recordApplied } from './applied.js';
import { setServiceTokens } from './services.js';

/**
 * Brings one owner's entries in the distribution-token index to `desired`: the new tokens are recorded
 * as applied first, every desired entry is written or, for an agent, written when it is missing
 * (idempotent, so an entry an interrupted reconcile deleted comes back even though the bookkeeping still
 * lists it), and the stale ones are deleted.
 * Returns the stale tokens: they stay recorded until the caller forgets them, which a service does only
 * after the agents they selected were asked to drop it.
 */
export async function syncTokenIndex(
  owner: AppliedOwner,
  desired: readonly string[],
  applied: Applied,
  /** A service's entries carry the listener every agent selecting it holds (see `readSelectedListeners`). */
  listener?: TcpListener,
  /** Set the owner's `selectionPending` mark in the same write as the new tokens' intent. */
  options: { markSelectionPending?: boolean } = {},
): Promise<string[]> {
  const stale = await recordTokenIntent(owner, desired, applied, options);
  if ('service' in owner) await setServiceTokens(owner.service, [...desired], stale, listener);
  else await setAgentTokens(owner.agent, [...desired], stale);
  return stale;
}

/**
 * The first half of `syncTokenIndex`, for a caller that writes the entries itself (with other items):
 * records the desired tokens not yet applied (intent first) and returns the stale ones.
 */
export async function recordTokenIntent(
  owner: AppliedOwner,
  desired: readonly string[],
  applied: Applied,
  options: { markSelectionPending?: boolean } = {},
): Promise<string[]> {
  await recordApplied(
    owner,
    { tokens: desired.filter((token) => !applied.tokens.includes(token)) },
    { markSelectionPending: options.markSelectionPending ?? false },
  );
  return applied.tokens.filter((token) => !desired.includes(token));
}
