import {
  type AttributeValue,
  DeleteItemCommand,
  type DynamoDBClient,
  PutItemCommand,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';
import { GLOBAL_INDEXES } from '../../shared/store/table.js';

type Item = Record<string, AttributeValue>;

async function scanAll(client: DynamoDBClient, tableName: string, indexName?: string): Promise<Item[]> {
  const items: Item[] = [];
  let ExclusiveStartKey: Item | undefined;
  do {
    const page = await client.send(
      new ScanCommand({
        TableName: tableName,
        IndexName: indexName,
        ExclusiveStartKey,
        ...(indexName ? {} : { ConsistentRead: true }),
      }),
    );
    items.push(...(page.Items ?? []));
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return items;
}

const baseKey = (item: Item) => `${item.PK?.S}\u0000${item.SK?.S}`;
const indexKey = (item: Item, n: number) => `${item[`GSI${n}PK`]?.S}\u0000${item[`GSI${n}SK`]?.S}`;

/**
 * The embedded store writes an item and its index entries as separate steps, so a process killed
 * mid-write can leave an index entry missing, or one describing a version of the item that never
 * landed. Before anything reads the indexes, each index is made to agree with the base items again:
 * a stray entry is removed by briefly writing its version back and then the base item, and every base
 * item is re-put, which rewrites its entries. Only the local runtime needs this; it runs before the
 * API and the workers start, so nothing writes concurrently.
 */
export async function rebuildIndexEntries(client: DynamoDBClient, tableName: string): Promise<number> {
  const base = new Map((await scanAll(client, tableName)).map((item) => [baseKey(item), item]));
  let strays = 0;
  for (const { name } of GLOBAL_INDEXES) {
    const n = Number(name.replace('GSI', ''));
    for (const entry of await scanAll(client, tableName, name)) {
      const owner = base.get(baseKey(entry));
      if (owner && indexKey(owner, n) === indexKey(entry, n)) continue;
      strays++;
      await client.send(new PutItemCommand({ TableName: tableName, Item: entry }));
      if (owner) await client.send(new PutItemCommand({ TableName: tableName, Item: owner }));
      else
        await client.send(
          new DeleteItemCommand({ TableName: tableName, Key: { PK: entry.PK!, SK: entry.SK! } }),
        );
    }
  }
  for (const item of base.values()) {
    if (GLOBAL_INDEXES.some((index) => item[index.partitionKey] !== undefined))
      await client.send(new PutItemCommand({ TableName: tableName, Item: item }));
  }
  return strays;
}
