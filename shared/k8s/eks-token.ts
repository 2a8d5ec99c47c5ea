import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, Provider, SourceData } from '@smithy/types';

/** SHA-256 / HMAC-SHA-256 from node:crypto in the shape SignatureV4 expects. */
class NodeSha256 {
  private hash: Hash | Hmac;
  private readonly secret: string | Uint8Array | undefined;
  constructor(secret?: SourceData) {
    this.secret = secret === undefined || typeof secret === 'string' ? secret : toBytes(secret);
    this.hash = this.fresh();
  }
  private fresh(): Hash | Hmac {
    return this.secret === undefined ? createHash('sha256') : createHmac('sha256', this.secret);
  }
  update(data: SourceData): void {
    this.hash.update(typeof data === 'string' ? data : toBytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {
    this.hash = this.fresh();
  }
}

function toBytes(data: ArrayBuffer | ArrayBufferView): Uint8Array {
  return ArrayBuffer.isView(data)
    ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
    : new Uint8Array(data);
}

/** EKS reads tokens valid for 15 minutes from the presign time; refresh well before. */
const TOKEN_LIFETIME_MS = 14 * 60 * 1000;

/**
 * The bearer token EKS accepts from an IAM identity (what `aws eks get-token` prints): a presigned STS
 * GetCallerIdentity URL, with the cluster name signed in the `x-k8s-aws-id` header, base64url without
 * padding behind `k8s-aws-v1.`.
 */
export async function mintEksToken(options: {
  clusterName: string;
  region: string;
  credentials: AwsCredentialIdentity | Provider<AwsCredentialIdentity>;
  now?: Date;
}): Promise<string> {
  const hostname = `sts.${options.region}.amazonaws.com`;
  const signer = new SignatureV4({
    credentials: options.credentials,
    region: options.region,
    service: 'sts',
    sha256: NodeSha256,
  });
  const presigned = await signer.presign(
    {
      method: 'GET',
      protocol: 'https:',
      hostname,
      path: '/',
      query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
      headers: { host: hostname, 'x-k8s-aws-id': options.clusterName },
    },
    { expiresIn: 60, signingDate: options.now },
  );
  const query = Object.entries(presigned.query ?? {})
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`)
    .join('&');
  const url = `https://${hostname}/?${query}`;
  return `k8s-aws-v1.${Buffer.from(url).toString('base64url')}`;
}

/** A token provider that mints from the worker's IAM role and reuses the token below its lifetime. */
export function cachedEksTokenProvider(mint: () => Promise<string>, clock: () => number = Date.now) {
  let cached: { token: string; expiresAt: number } | undefined;
  return async (): Promise<string> => {
    if (!cached || clock() >= cached.expiresAt)
      cached = { token: await mint(), expiresAt: clock() + TOKEN_LIFETIME_MS };
    return cached.token;
  };
}
