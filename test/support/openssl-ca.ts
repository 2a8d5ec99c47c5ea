import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A CA as an operator makes one with OpenSSL (an X.509 implementation independent of fogbridge's own):
 * CA:TRUE, keyCertSign and cRLSign, a PKCS#8 key of the kind `keyArgs` asks for (RSA 2048 by default),
 * valid a year. Its files stay in `dir` (a fresh temporary folder unless given).
 */
export function opensslCa(
  name: string,
  options: { keyArgs?: string[]; dir?: string } = {},
): { certPem: string; keyPem: string; dir: string; certFile: string } {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'openssl-ca-'));
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', ...(options.keyArgs ?? ['-newkey', 'rsa:2048']), '-nodes', '-days', '365'],
      ...['-subj', `/CN=${name}`, '-keyout', keyFile, '-out', certFile],
      ...['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'],
    ],
    { stdio: 'ignore' },
  );
  return { certPem: readFileSync(certFile, 'utf8'), keyPem: readFileSync(keyFile, 'utf8'), dir, certFile };
}
