import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { DecryptCommand, EncryptCommand, KMSClient } from '@aws-sdk/client-kms';
import { config, perContext } from './context.js';

/**
 * Sealing of the secrets fogbridge keeps in its table (CA and certificate private keys): with a KMS key
 * in AWS (`SECRETS_KMS_KEY_ID`), with a local AES-256-GCM key file in the embedded runtime. A sealed
 * value names how it was sealed, and the `purpose` (e.g. the certificate's name) is bound to it (KMS
 * encryption context, GCM additional data), so a sealed key copied onto another record does not open.
 */

const kmsClient = perContext(function kmsClient(settings): KMSClient {
  return new KMSClient({
    region: settings.region,
    maxAttempts: 5,
    ...(settings.endpoints.kms ? { endpoint: settings.endpoints.kms } : {}),
    ...(settings.credentials ? { credentials: settings.credentials } : {}),
  });
});

export class SecretsNotConfiguredError extends Error {
  override name = 'SecretsNotConfiguredError';
}

export async function sealSecret(plaintext: string, purpose: string): Promise<string> {
  const { kmsKeyId, localKey } = config().secrets;
  if (kmsKeyId) {
    const { CiphertextBlob } = await kmsClient().send(
      new EncryptCommand({
        KeyId: kmsKeyId,
        Plaintext: Buffer.from(plaintext, 'utf8'),
        EncryptionContext: { purpose },
      }),
    );
    return `kms:v1:${Buffer.from(CiphertextBlob!).toString('base64')}`;
  }
  if (localKey) {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', localKey, iv);
    cipher.setAAD(Buffer.from(purpose, 'utf8'));
    const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `local:v1:${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64')}`;
  }
  throw new SecretsNotConfiguredError(
    'No key to seal secrets with: set SECRETS_KMS_KEY_ID (AWS) or run the local runtime, which keeps one in its data folder',
  );
}

export async function openSecret(sealed: string, purpose: string): Promise<string> {
  const [scheme, version, data] = sealed.split(':');
  if (version !== 'v1' || !data) throw new Error('Unknown sealed secret format');
  const bytes = Buffer.from(data, 'base64');
  if (scheme === 'kms') {
    const { Plaintext } = await kmsClient().send(
      new DecryptCommand({ CiphertextBlob: bytes, EncryptionContext: { purpose } }),
    );
    return Buffer.from(Plaintext!).toString('utf8');
  }
  if (scheme === 'local') {
    const { localKey } = config().secrets;
    if (!localKey)
      throw new SecretsNotConfiguredError('This secret was sealed with a local key, which is not configured');
    const decipher = createDecipheriv('aes-256-gcm', localKey, bytes.subarray(0, 12));
    decipher.setAAD(Buffer.from(purpose, 'utf8'));
    decipher.setAuthTag(bytes.subarray(12, 28));
    return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8');
  }
  throw new Error(`Unknown sealed secret scheme ${scheme}`);
}
