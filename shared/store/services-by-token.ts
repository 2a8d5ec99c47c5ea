import { queryPartition } from './query.js';

/** Service names whose token index entry holds `token` (entries may lag the rows; callers re-check). */
export async function listServiceNamesByToken(token: string): Promise<string[]> {
  const items = await queryPartition<{ name: string }>(`TOKEN#${token}`);
  return items.map((item) => item.name);
}
