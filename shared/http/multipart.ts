import type middy from '@middy/core';
import httpMultipartBodyParser from '@middy/http-multipart-body-parser';
import { MAX_YAML_BYTES } from '../domain/yaml.js';
import { UnsupportedMediaTypeError, ValidationError } from '../errors.js';
import type { ApiEvent, ApiResult } from './api.js';

const parser = httpMultipartBodyParser({
  // One byte past the limit, so an oversized upload is seen as oversized, not silently cut.
  busboy: { limits: { fileSize: MAX_YAML_BYTES + 1, fieldSize: MAX_YAML_BYTES + 1, files: 2, fields: 8 } },
}) as unknown as Required<middy.MiddlewareObj<ApiEvent, ApiResult>>;

/**
 * Parses a multipart/form-data body in place with precise errors: a wrong or incomplete media type is
 * 415 and quotes the header; a body that does not parse as multipart is 400.
 */
export async function parseMultipart(event: ApiEvent, field: string): Promise<void> {
  const contentType =
    Object.entries(event.headers ?? {}).find(([key]) => key.toLowerCase() === 'content-type')?.[1] ?? '';
  const boundary = /;\s*boundary=("?)([^";]{1,70})\1/i.exec(contentType);
  if (!/^multipart\/form-data\s*;/i.test(contentType) || !boundary) {
    throw new UnsupportedMediaTypeError(
      `Content-Type ${JSON.stringify(contentType)} is not supported here; send multipart/form-data (with a boundary) and the YAML in field '${field}'`,
    );
  }
  // RFC 2046 allows a quoted boundary; the parser only takes the bare form.
  event.headers = { ...event.headers, 'content-type': `multipart/form-data; boundary=${boundary[2]}` };
  try {
    await parser.before({ event } as never);
  } catch {
    throw new ValidationError('Request body is not valid multipart/form-data');
  }
}

/** A text field of a parsed multipart body, sent either as a plain field or as a file. */
export function multipartField(event: ApiEvent, field: string): string {
  const body = event.body as unknown;
  const value =
    body !== null && typeof body === 'object' ? (body as Record<string, unknown>)[field] : undefined;
  if (value === undefined) throw new ValidationError(`Multipart field '${field}' is required`);
  if (Array.isArray(value)) throw new ValidationError(`Multipart field '${field}' must be sent once`);
  if (typeof value === 'string') return checkSize(field, Buffer.byteLength(value), value);
  const file = value as { content?: Buffer; truncated?: boolean };
  if (!Buffer.isBuffer(file.content)) throw new ValidationError(`Multipart field '${field}' is required`);
  if (file.truncated) checkSize(field, Number.POSITIVE_INFINITY, '');
  return checkSize(
    field,
    file.content.length,
    new TextDecoder('utf-8', { fatal: false }).decode(file.content),
  );
}

function checkSize(field: string, bytes: number, text: string): string {
  if (bytes > MAX_YAML_BYTES) {
    throw new ValidationError(
      `Error parsing YAML: document is larger than ${MAX_YAML_BYTES} bytes (multipart field '${field}')`,
    );
  }
  return text;
}
