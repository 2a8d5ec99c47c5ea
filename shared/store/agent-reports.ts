import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { batchGetItems, documentClient, getItem, keys, tableName } from './client.js';

/** What an agent last reported with PUT /agent/status, and when (epoch ms). */
export interface AgentStatusRow {
  status: Record<string, unknown>;
  lastActive: number;
}

/** The agent's own settings as it last sent them with PATCH /agent/config. */
export interface AgentConfigRow {
  config: Record<string, unknown>;
  updatedAt: string;
}

/**
 * Agent reports live in items of their own, not on the agent row: an agent reports every few seconds,
 * and that must never race a user's change of the agent (whose writes are conditioned on its generation).
 */
export async function putAgentStatus(agentUuid: string, row: AgentStatusRow): Promise<void> {
  await documentClient().send(
    new PutCommand({ TableName: tableName(), Item: { ...keys.agentStatus(agentUuid), ...row } }),
  );
}

export function getAgentStatus(agentUuid: string): Promise<AgentStatusRow | undefined> {
  return getItem<AgentStatusRow>(keys.agentStatus(agentUuid));
}

/** The statuses of many agents (batched reads). */
export async function getAgentStatuses(agentUuids: readonly string[]): Promise<Map<string, AgentStatusRow>> {
  const found = await batchGetItems<AgentStatusRow>(agentUuids.map((uuid) => keys.agentStatus(uuid)));
  return new Map([...found].map(([index, row]) => [agentUuids[index]!, row]));
}

export async function putAgentConfig(agentUuid: string, config: Record<string, unknown>): Promise<void> {
  await documentClient().send(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.agentConfig(agentUuid), config, updatedAt: new Date().toISOString() },
    }),
  );
}

export function getAgentConfig(agentUuid: string): Promise<AgentConfigRow | undefined> {
  return getItem<AgentConfigRow>(keys.agentConfig(agentUuid));
}

export async function deleteAgentReports(agentUuid: string): Promise<void> {
  await Promise.all(
    [keys.agentStatus(agentUuid), keys.agentConfig(agentUuid)].map((key) =>
      documentClient().send(new DeleteCommand({ TableName: tableName(), Key: key })),
    ),
  );
}
