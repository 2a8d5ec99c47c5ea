// Minimal JSON client for the test apiserver. Node 20's global fetch cannot be given a CA without the
// `undici` package (not installed), so this uses node:https with the harness's CA file.
import { readFileSync } from 'node:fs';
import { request } from 'node:https';

export interface KubeResponse<T = Record<string, unknown>> {
  status: number;
  body: T;
}

export interface KubeClientOptions {
  url: string;
  /** Bearer token; omitted means an anonymous request. */
  token?: string;
  caFile?: string;
}

export class KubeClient {
  private readonly ca: string | undefined;

  constructor(private readonly options: KubeClientOptions) {
    this.ca = options.caFile ? readFileSync(options.caFile, 'utf8') : undefined;
  }

  /** The same server with another token (or none). */
  withToken(token: string | undefined): KubeClient {
    return new KubeClient({ ...this.options, token });
  }

  get<T = Record<string, unknown>>(path: string) {
    return this.send<T>('GET', path);
  }

  post<T = Record<string, unknown>>(path: string, body: unknown) {
    return this.send<T>('POST', path, body);
  }

  put<T = Record<string, unknown>>(path: string, body: unknown) {
    return this.send<T>('PUT', path, body);
  }

  delete<T = Record<string, unknown>>(path: string) {
    return this.send<T>('DELETE', path);
  }

  send<T>(method: string, path: string, body?: unknown): Promise<KubeResponse<T>> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    if (payload !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    return new Promise((resolve, reject) => {
      const req = request(
        new URL(path, this.options.url),
        { method, headers, ...(this.ca ? { ca: this.ca } : {}), timeout: 30_000 },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            try {
              parsed = text ? JSON.parse(text) : undefined;
            } catch {
              // not JSON: keep the text
            }
            resolve({ status: res.statusCode ?? 0, body: parsed as T });
          });
        },
      );
      req.once('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
      req.once('error', reject);
      req.end(payload);
    });
  }
}
