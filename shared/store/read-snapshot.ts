import { batchGetItems } from './client.js';
import { openReadSnapshot } from './snapshot.js';

/**
 * Runs `work` with the items at `itemKeys` read up front in one consistent batch: a GetItem of one of
 * them inside `work` is answered from that read (see snapshot.ts for what keeps it true).
 */
export function withReadSnapshot<T>(
  itemKeys: readonly { PK: string; SK: string }[],
  work: () => Promise<T>,
  options: { onReadFailed?: (error: unknown) => void } = {},
): Promise<T> {
  return openReadSnapshot(itemKeys, batchGetItems, work, options);
}
