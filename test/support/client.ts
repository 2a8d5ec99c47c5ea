/** A thin HTTP client for the fogbridge API; returns status and parsed body, never throws on 4xx/5xx. */
export interface ApiResponse<T = unknown> {
  status: number;
  body: T;
  text: string;
  headers: Headers;
}

export class ApiClient {
  constructor(
    readonly baseUrl: string,
    /** Sent as `Authorization: Bearer` unless a request sets its own Authorization header. */
    readonly token?: string,
  ) {}

  async request<T = unknown>(
    method: string,
    path: string,
    init: { json?: unknown; body?: BodyInit; headers?: Record<string, string> } = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = {
      ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
      ...(init.headers ?? {}),
    };
    let body = init.body;
    if (init.json !== undefined) {
      headers['content-type'] ??= 'application/json';
      body = JSON.stringify(init.json);
    }
    const response = await fetch(`${this.baseUrl}${path}`, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON; leave the text
    }
    return { status: response.status, body: parsed as T, text, headers: response.headers };
  }

  get<T = unknown>(path: string) {
    return this.request<T>('GET', path);
  }
  post<T = unknown>(path: string, json: unknown) {
    return this.request<T>('POST', path, { json });
  }
  patch<T = unknown>(path: string, json: unknown) {
    return this.request<T>('PATCH', path, { json });
  }
  put<T = unknown>(path: string, json: unknown) {
    return this.request<T>('PUT', path, { json });
  }
  delete<T = unknown>(path: string) {
    return this.request<T>('DELETE', path);
  }

  /** multipart/form-data with the YAML in field `service`, as potctl sends it. */
  postYaml<T = unknown>(path: string, yaml: string, method = 'POST', field = 'service') {
    const form = new FormData();
    form.append(field, new Blob([yaml], { type: 'application/x-yaml' }), 'service.yaml');
    return this.request<T>(method, path, { body: form });
  }
}

/** Polls `probe` until it returns a value that is not undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`Timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
