import { expect } from 'vitest';
import { type GoType, goUnmarshal } from './go-json.js';

/**
 * The Go SDK's `doRequest` (iofog-go-sdk `pkg/client`) against a controller: its headers
 * (`Authorization: Bearer`, `Content-Type: application/json` even on GET and DELETE), multipart uploads
 * in a file part of type `application/octet-stream`, its success rule (any 2xx), and an OK body decoded
 * with `encoding/json` into the SDK's struct (a wrong JSON type fails the call).
 */
export function sdkClient(controller: { url: string; adminToken?: string | undefined }) {
  return async function sdk<T = unknown>(
    method: string,
    path: string,
    options: {
      json?: unknown;
      multipart?: { field: string; file: string; yaml: string };
      decode?: GoType;
    } = {},
  ): Promise<T> {
    const headers: Record<string, string> = { authorization: `Bearer ${controller.adminToken ?? ''}` };
    let body: BodyInit | undefined;
    if (options.multipart) {
      const form = new FormData();
      const { field, file, yaml } = options.multipart;
      form.append(field, new Blob([yaml], { type: 'application/octet-stream' }), file);
      body = form;
    } else {
      headers['content-type'] = 'application/json';
      if (options.json !== undefined) body = JSON.stringify(options.json);
    }
    const response = await fetch(`${controller.url}/api/v3${path}`, { method, headers, body });
    const text = await response.text();
    expect(response.status, `${method} ${path}: ${text}`).toBeGreaterThanOrEqual(200);
    expect(response.status, `${method} ${path}: ${text}`).toBeLessThan(300);
    if (!options.decode) return undefined as T;
    const decoded = JSON.parse(text) as unknown;
    goUnmarshal(decoded, options.decode);
    return decoded as T;
  };
}
