import { createPublicKey } from 'node:crypto';
import { decodeJwt, jwtVerify } from 'jose';
import { config } from '../context.js';
import { AuthenticationError } from '../errors.js';
import { getAgentRow } from '../store/agents.js';
import { getAgentPublicKey, recordTokenId } from '../store/credentials.js';
import { bearerToken } from './user-tokens.js';

const AGENT_AUTH_FAILED = 'authorization failed';
/** Clock skew tolerated between an Edgelet and the controller. */
const CLOCK_TOLERANCE_SECONDS = 30;

/**
 * Verifies an agent token the reference way: EdDSA signed with the agent's provisioned Ed25519 key,
 * `sub` = agent uuid, a short `exp`, and a `jti` accepted once. Returns the agent uuid. Every failure
 * is the same 401 `authorization failed`.
 */
export async function verifyAgentToken(authorization: string | undefined): Promise<string> {
  try {
    const token = bearerToken(authorization);
    const subject = decodeJwt(token).sub;
    if (!subject || !(await getAgentRow(subject))) throw new Error('unknown agent');
    const publicKeyPem = await getAgentPublicKey(subject);
    if (!publicKeyPem) throw new Error('agent not provisioned');
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
    if (payload.iat! > now + CLOCK_TOLERANCE_SECONDS) throw new Error('issued in the future');
    if (lifetime <= 0 || lifetime > maxLifetime) throw new Error('lifetime too long');
    // Only a token whose signature verified may write its id: garbage cannot fill the table.
    if (!(await recordTokenId(subject, String(payload.jti), payload.exp! * 1000)))
      throw new Error('replayed jti');
    return subject;
  } catch (error) {
    // A store outage is not the agent's fault: let it surface as a 5xx and be retried.
    if ((error as { $metadata?: unknown }).$metadata !== undefined) throw error;
    throw new AuthenticationError(AGENT_AUTH_FAILED);
  }
}
