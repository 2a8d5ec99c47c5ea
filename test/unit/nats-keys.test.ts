import { createAccount, createOperator, createUser, fromSeed } from '@nats-io/nkeys';
import { describe, expect, it } from 'vitest';
import { keyOf } from '../../shared/domain/nats-claims.js';

/**
 * The controller signs NATS JWTs with nkey pairs whose public keys and signatures Node's native Ed25519
 * computes; NATS servers and the nats tooling read them. They must be byte for byte what the nkeys
 * library's own pair gives for the same seed, for every kind of key the controller signs with or hands out.
 */

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe('a signing pair from a seed', () => {
  it.each([
    ['operator', createOperator],
    ['account', createAccount],
    ['user', createUser],
  ])("of an %s: public key, private key, seed and signatures are the library pair's", (_kind, create) => {
    // Prepare
    const seed = text(create().getSeed());
    const library = fromSeed(new TextEncoder().encode(seed));
    const message = new TextEncoder().encode('{"jti":"ABC","iat":1796385600}');

    // Act
    const pair = keyOf(seed);

    // Assess
    expect(pair.getPublicKey()).toBe(library.getPublicKey());
    expect(text(pair.getPrivateKey())).toBe(text(library.getPrivateKey()));
    expect(text(pair.getSeed())).toBe(seed);
    expect(Buffer.from(pair.sign(message)).toString('hex')).toBe(
      Buffer.from(library.sign(message)).toString('hex'),
    );
    expect(pair.verify(message, library.sign(message))).toBe(true);
    expect(library.verify(message, pair.sign(message))).toBe(true);
  });
});
