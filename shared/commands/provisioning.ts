import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { config } from '../context.js';
import type { ProvisionBody } from '../domain/agent-protocol-schema.js';
import { AuthenticationError, NotFoundError } from '../errors.js';
import { getAgentRow } from '../store/agents.js';
import {
  latestProvisioningKeyHash,
  putAgentPublicKey,
  putProvisioningKey,
  takeProvisioningKey,
} from '../store/credentials.js';

const hashKey = (key: string) => createHash('sha256').update(key, 'utf8').digest('hex');

/** Issues a single-use provisioning key for an agent; only its hash is stored. */
export async function issueProvisioningKey(
  agentUuid: string,
): Promise<{ key: string; expirationTime: number }> {
  if (!(await getAgentRow(agentUuid))) throw new NotFoundError(`Agent with uuid ${agentUuid} not found`);
  const key = randomBytes(18).toString('base64url');
  const expirationTime = Date.now() + config().auth.provisioningKeyTtlSeconds * 1000;
  await putProvisioningKey(hashKey(key), agentUuid, expirationTime);
  return { key, expirationTime };
}

/**
 * Exchanges a provisioning key for an agent identity: a fresh Ed25519 key pair whose private half is
 * returned once (base64 PKCS#8 DER) and never stored. The key is consumed whether or not it is valid.
 */
export async function provisionAgent({
  key,
}: ProvisionBody): Promise<{ uuid: string; privateKey: string; namespace: string }> {
  const hash = hashKey(key);
  const taken = await takeProvisioningKey(hash);
  if (!taken || (await latestProvisioningKeyHash(taken.agentUuid)) !== hash) {
    throw new NotFoundError('Invalid provisioning key');
  }
  if (taken.expiresAt < Date.now()) throw new AuthenticationError('Expired provisioning key');
  if (!(await getAgentRow(taken.agentUuid))) throw new NotFoundError('Invalid provisioning key');
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  await putAgentPublicKey(taken.agentUuid, publicKey.export({ type: 'spki', format: 'pem' }).toString());
  return {
    uuid: taken.agentUuid,
    privateKey: privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
    namespace: config().controllerNamespace,
  };
}
