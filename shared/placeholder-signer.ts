import type { HttpRequest, RequestSigningArguments } from '@smithy/types';

/**
 * Signs a request for the embedded runtime's emulators with a placeholder: dynalite checks that an
 * Authorization header is well formed (algorithm, credential scope, signed headers, a date) but never
 * verifies the signature, and fauxqs reads only the scope's region (a queue's URL and ARN carry it).
 * Computing a real SigV4 signature hashes every body and chains four HMACs per call, CPU the embedded
 * runtime's handlers share two cores with; AWS clients (no emulator) always sign for real.
 */
export function placeholderSigner(region: string, service: 'dynamodb' | 'sqs') {
  return {
    sign: async (request: HttpRequest, options: RequestSigningArguments = {}): Promise<HttpRequest> => {
      // 20261202T180000Z: the basic ISO 8601 form SigV4 dates take.
      const date = new Date(options.signingDate ?? Date.now());
      const amzDate = `${date.toISOString().slice(0, 19).replace(/[-:]/g, '')}Z`;
      request.headers['x-amz-date'] = amzDate;
      request.headers.authorization =
        `AWS4-HMAC-SHA256 Credential=local/${amzDate.slice(0, 8)}/${region}/${service}/aws4_request, ` +
        'SignedHeaders=host;x-amz-date, Signature=placeholder';
      return request;
    },
  };
}
