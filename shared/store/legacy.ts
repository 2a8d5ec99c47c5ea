import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { recordApplied } from './applied.js';
import { CHANGE_FLAGS, raiseChangeFlags } from './changes.js';
import { batchGetItems, documentClient, keys, tableName } from './client.js';

/**
 * An earlier layout kept two things of an agent in items of their own, both now on its router's request
 * record: its change flags (`CHANGES#<uuid>`) and the tokens it was indexed under (`APPLIED#AGENT#<uuid>`).
 * Adopts what such items of these agents hold, then deletes them: the tokens are added to the agent's
 * applied set (so a later reconcile still cleans their index entries up), and every flag the agent had
 * not acknowledged is raised again (so no change it was owed goes unseen). Idempotent; returns how
 * many items it adopted.
 */
export async function adoptLegacyAgentItems(agentUuids: readonly string[]): Promise<number> {
  const legacy = agentUuids.flatMap((uuid) => [
    { uuid, kind: 'changes' as const, key: { PK: `CHANGES#${uuid}`, SK: 'CHANGES' } },
    { uuid, kind: 'applied' as const, key: keys.applied(`AGENT#${uuid}`) },
  ]);
  const found = await batchGetItems<Record<string, unknown>>(legacy.map((item) => item.key));
  for (const [index, item] of found) {
    const { uuid, kind, key } = legacy[index]!;
    if (kind === 'applied') {
      const tokens = item.tokens instanceof Set ? [...item.tokens].map(String) : [];
      await recordApplied({ agent: uuid }, { tokens });
    } else {
      const acknowledged = Number(item.ackedSeq ?? 0);
      const owed = CHANGE_FLAGS.filter((flag) => Number(item[`seq_${flag}`] ?? 0) > acknowledged);
      if (owed.length > 0) await raiseChangeFlags(uuid, owed);
    }
    await documentClient().send(new DeleteCommand({ TableName: tableName(), Key: key }));
  }
  return found.size;
}
