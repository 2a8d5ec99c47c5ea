import { Busboy } from '@fastify/busboy';
import type { APIGatewayProxyEventV2 as ApiEvent } from 'aws-lambda';
import { MAX_YAML_BYTES } from '../domain/yaml.js';
import { UnsupportedMediaTypeError, ValidationError } from '../errors.js';

/** One part of a multipart body: a plain field's text or a file's bytes. */
export interface MultipartPart {
  content: Buffer;
  /** The part was longer than the parser keeps (one byte past the YAML limit). */
  truncated: boolean;
}

/** Parts by field name. A Map, so a client's field names (`__proto__`, `constructor`) stay data. */
export type MultipartParts = Map<string, MultipartPart[]>;

/**
 * RFC 2046 §5.1.1: 1–70 characters of DIGIT / ALPHA / `'()+_,-./:=?` and space (not last), quoted
 * when it holds characters a token may not.
 */
const BOUNDARY =
  /;\s*boundary=(?:"([0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?])"|([0-9A-Za-z'()+_,\-./:=?]{1,70}))\s*(?:;|$)/i;
const LIMITS = {
  // One byte past the limit, so an oversized upload is seen as oversized, not silently cut.
  fileSize: MAX_YAML_BYTES + 1,
  fieldSize: MAX_YAML_BYTES + 1,
  fieldNameSize: 100,
  parts: 8,
  headerPairs: 16,
};

function contentTypeOf(event: ApiEvent): string {
  return Object.entries(event.headers ?? {}).find(([key]) => key.toLowerCase() === 'content-type')?.[1] ?? '';
}

function bodyBytes(event: ApiEvent): Buffer {
  const body = event.body ?? '';
  return Buffer.from(body, event.isBase64Encoded ? 'base64' : 'utf8');
}

/**
 * Parses a multipart/form-data body with precise errors: a wrong or incomplete media type is 415 and
 * quotes the header; a body that does not parse as multipart is 400. The whole body is in memory (API
 * Gateway delivers it so), and every parser event is handled inside the promise, so no input can
 * throw outside it.
 */
export async function parseMultipart(event: ApiEvent, field: string): Promise<MultipartParts> {
  const contentType = contentTypeOf(event);
  const boundary = BOUNDARY.exec(contentType);
  if (!/^multipart\/form-data\s*;/i.test(contentType) || !boundary) {
    throw new UnsupportedMediaTypeError(
      `Content-Type ${JSON.stringify(contentType.slice(0, 200))} is not supported here; send multipart/form-data (with a boundary) and the YAML in field '${field}'`,
    );
  }
  const headers = { 'content-type': `multipart/form-data; boundary="${boundary[1] ?? boundary[2]}"` };
  try {
    return await readParts(headers, bodyBytes(event));
  } catch (error) {
    if (error instanceof ValidationError) throw error;
    throw new ValidationError('Request body is not valid multipart/form-data');
  }
}

function readParts(headers: { 'content-type': string }, body: Buffer): Promise<MultipartParts> {
  return new Promise<MultipartParts>((resolve, reject) => {
    const parts: MultipartParts = new Map();
    const add = (name: string, part: MultipartPart) => parts.set(name, [...(parts.get(name) ?? []), part]);
    let openFiles = 0;
    let finished = false;
    const settle = () => {
      if (finished && openFiles === 0) resolve(parts);
    };
    const busboy = new Busboy({ headers, limits: LIMITS });
    busboy.on('field', (name, value, _nameTruncated, valueTruncated) =>
      add(name, { content: Buffer.from(value, 'utf8'), truncated: valueTruncated }),
    );
    busboy.on('file', (name, stream) => {
      openFiles++;
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', reject);
      stream.on('end', () => {
        add(name, { content: Buffer.concat(chunks), truncated: stream.truncated });
        openFiles--;
        settle();
      });
    });
    busboy.on('partsLimit', () =>
      reject(new ValidationError(`Request body has more than ${LIMITS.parts} multipart parts`)),
    );
    busboy.on('error', reject);
    busboy.on('finish', () => {
      finished = true;
      settle();
    });
    busboy.end(body);
  });
}

/** The text of field `field`, sent once, either as a plain field or as a file. */
export function multipartField(parts: MultipartParts, field: string): string {
  const sent = parts.get(field) ?? [];
  if (sent.length === 0) throw new ValidationError(`Multipart field '${field}' is required`);
  if (sent.length > 1)
    throw new ValidationError(
      `Multipart field '${field}' must be sent once (it was sent ${sent.length} times)`,
    );
  const [part] = sent as [MultipartPart];
  if (part.truncated || part.content.length > MAX_YAML_BYTES) {
    throw new ValidationError(
      `Error parsing YAML: document is larger than ${MAX_YAML_BYTES} bytes (multipart field '${field}')`,
    );
  }
  return new TextDecoder('utf-8', { fatal: false }).decode(part.content);
}
