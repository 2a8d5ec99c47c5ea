import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { config } from '../context.js';
import type { ProvisionBody } from '../domain/agent-protocol-schema.js';
import { AuthenticationError, NotFoundError } from '../errors.js';
import { getAgentRow } from '../store/agents.js';
import { raiseChangeFlag } from '../store/changes.js';
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
 * returned once and never stored, as Edgelet loads it: base64 of the JSON Web Key (`kty` OKP, `crv`
 * Ed25519, `d` and `x` base64url). The key is consumed whether or not it is valid. Provisioning also
 * asks the agent to load its registries, volume mounts and microservices (as the reference does).
 */
export async function provisionAgent({
  key,
  type,
}: ProvisionBody): Promise<{ uuid: string; privateKey: string; namespace: string }> {
  const hash = hashKey(key);
  const taken = await takeProvisioningKey(hash);
  if (!taken || (await latestProvisioningKeyHash(taken.agentUuid)) !== hash) {
    throw new NotFoundError('Invalid provisioning key');
  }
  if (taken.expiresAt < Date.now()) throw new AuthenticationError('Expired provisioning key');
  if (!(await getAgentRow(taken.agentUuid))) throw new NotFoundError('Invalid provisioning key');
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  await putAgentPublicKey(
    taken.agentUuid,
    publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    type,
  );
  for (const flag of ['registries', 'volumeMounts', 'microserviceList', 'microserviceConfig'] as const) {
    await raiseChangeFlag(taken.agentUuid, flag);
  }
  return {
    uuid: taken.agentUuid,
    privateKey: Buffer.from(JSON.stringify(privateKey.export({ format: 'jwk' }))).toString('base64'),
    namespace: config().controllerNamespace,
  };
}
