import { createPublicKey } from 'node:crypto';
import { decodeJwt, jwtVerify } from 'jose';
import { JOSEError } from 'jose/errors';
import { config } from '../context.js';
import { AGENT_UUID } from '../domain/agent-schema.js';
import { AuthenticationError } from '../errors.js';
import { getAgentRow } from '../store/agents.js';
import { getAgentPublicKey, recordTokenId } from '../store/credentials.js';
import { bearerToken } from './user-tokens.js';

const AGENT_AUTH_FAILED = 'authorization failed';
/** Clock skew tolerated between an Edgelet and the controller. */
const CLOCK_TOLERANCE_SECONDS = 30;

/** A token refused for what it says (as opposed to the store failing while it was checked). */
class AgentTokenRejectedError extends Error {}

const MAX_JTI_LENGTH = 128;

/** The claims that pick store keys, checked for shape before any of them reaches the store. */
function claimedIdentity(token: string): { subject: string; jti: string } {
  const { sub, jti } = decodeJwt(token);
  if (typeof sub !== 'string' || !AGENT_UUID.test(sub)) throw new AgentTokenRejectedError('bad sub');
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > MAX_JTI_LENGTH)
    throw new AgentTokenRejectedError('bad jti');
  return { subject: sub, jti };
}

/**
 * Verifies an agent token the reference way: EdDSA signed with the agent's provisioned Ed25519 key,
 * `sub` = agent uuid, a short `exp`, and a `jti` accepted once. Returns the agent uuid. Every refusal
 * is the same 401 `authorization failed`; the store is read only with well-formed claims (the key of
 * the agent the token names) and written only once the signature has verified.
 */
export async function verifyAgentToken(authorization: string | undefined): Promise<string> {
  try {
    const token = bearerToken(authorization);
    const { subject, jti } = claimedIdentity(token);
    const publicKeyPem = await getAgentPublicKey(subject);
    if (!publicKeyPem) throw new AgentTokenRejectedError('agent not provisioned');
    const maxLifetime = config().auth.agentTokenMaxLifetimeSeconds;
    const { payload } = await jwtVerify(token, createPublicKey(publicKeyPem), {
      algorithms: ['EdDSA'],
      subject,
      requiredClaims: ['exp', 'iat', 'jti', 'sub'],
      maxTokenAge: maxLifetime,
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
    });
    const now = Math.floor(Date.now() / 1000);
    const lifetime = payload.exp! - payload.iat!;
    // A token dated in the future would otherwise outlive the limit by however far ahead it is dated.
    if (payload.iat! > now + CLOCK_TOLERANCE_SECONDS)
      throw new AgentTokenRejectedError('issued in the future');
    if (lifetime <= 0 || lifetime > maxLifetime) throw new AgentTokenRejectedError('lifetime too long');
    // Only a token whose signature verified may write its id: garbage cannot fill the table. The agent's
    // row is read beside that write (one round trip for both): a key outlives its agent only briefly.
    const [agent, firstUse] = await Promise.all([
      getAgentRow(subject),
      recordTokenId(subject, jti, payload.exp! * 1000),
    ]);
    if (!agent) throw new AgentTokenRejectedError('unknown agent');
    if (!firstUse) throw new AgentTokenRejectedError('replayed jti');
    return subject;
  } catch (error) {
    if (
      error instanceof AgentTokenRejectedError ||
      error instanceof JOSEError ||
      error instanceof AuthenticationError
    )
      throw new AuthenticationError(AGENT_AUTH_FAILED);
    // A store outage is not the agent's fault: it surfaces as a 5xx and is retried.
    throw error;
  }
}
