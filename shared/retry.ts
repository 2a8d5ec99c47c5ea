/** What an optimistic attempt returns when a conditional write lost the race: read again and retry. */
export const CONFLICT = Symbol('conflict');

/**
 * Optimistic concurrency in one place: runs `attempt` (read, decide, conditional write) until it returns
 * something other than CONFLICT, at most `times` times; then throws what `exhausted` makes. Each attempt
 * re-reads what it depends on, so the retry decides again from the current state.
 */
export async function retryOnConflict<T>(
  attempt: (n: number) => Promise<T | typeof CONFLICT>,
  options: { times: number; exhausted: () => Error },
): Promise<T> {
  for (let n = 0; n < options.times; n++) {
    const result = await attempt(n);
    if (result !== CONFLICT) return result;
  }
  throw options.exhausted();
}
