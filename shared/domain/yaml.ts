import { parseAllDocuments } from 'yaml';
import { ValidationError } from '../errors.js';
import { show } from './validation.js';

/** Largest YAML document accepted (a multipart upload of one kind). */
export const MAX_YAML_BYTES = 64 * 1024;

/** A document is a few levels deep; anything far deeper is hostile and is refused unparsed. */
export const MAX_YAML_DEPTH = 32;

/**
 * The deepest nesting of a YAML text: flow brackets and block indentation, outside quotes and
 * comments. An estimate, but one that never under-counts what a parser would have to recurse into.
 */
export function nestingDepth(source: string): number {
  let deepest = 0;
  let flow = 0;
  for (const line of source.split('\n')) {
    const indent = line.length - line.trimStart().length;
    const content = line.trimStart();
    if (content === '' || content.startsWith('#')) continue;
    let quote: string | undefined;
    for (const char of content) {
      if (quote) {
        if (char === quote) quote = undefined;
      } else if (char === '"' || char === "'") quote = char;
      else if (char === '#') break;
      else if (char === '[' || char === '{') deepest = Math.max(deepest, ++flow + Math.floor(indent / 2));
      else if (char === ']' || char === '}') flow = Math.max(0, flow - 1);
    }
    deepest = Math.max(deepest, Math.floor(indent / 2) + 1);
  }
  return deepest;
}

/**
 * Loads one YAML document of `kind` (Service, Application, Microservice) as potctl uploads it, with the
 * reference controller's messages: size, encoding and nesting are checked before the text is parsed
 * (a parser recursing into hostile input must never run), then one document, its kind, and that it has
 * metadata and spec. `apiVersion` is not checked.
 */
export function loadYamlDocument(source: string, kind: string | readonly string[]): Record<string, unknown> {
  if (Buffer.byteLength(source, 'utf8') > MAX_YAML_BYTES) {
    throw new ValidationError(`Error parsing YAML: document is larger than ${MAX_YAML_BYTES} bytes`);
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: YAML forbids these and they hint at a binary upload
  if (source.includes('\uFFFD') || /[\u0000-\u0008\u000e-\u001f]/.test(source)) {
    throw new ValidationError('Error parsing YAML: the document is not UTF-8 text');
  }
  const depth = nestingDepth(source);
  if (depth > MAX_YAML_DEPTH) {
    throw new ValidationError(
      `Error parsing YAML: nesting is ${depth} levels deep; the limit is ${MAX_YAML_DEPTH}`,
    );
  }
  const documents = parseAllDocuments(source, { uniqueKeys: true });
  if (!Array.isArray(documents)) throw new ValidationError('Error parsing YAML: empty document');
  if (documents.length === 0) throw new ValidationError('Invalid YAML format: missing kind field');
  if (documents.length > 1)
    throw new ValidationError('Error parsing YAML: expected one document, found several');
  const document = documents[0]!;
  const error = document.errors[0];
  if (error)
    throw new ValidationError(`Error parsing YAML: ${error.message.split('\n')[0]!.replace(/:$/, '')}`);
  let value: unknown;
  try {
    value = document.toJS({ maxAliasCount: 50 });
  } catch (cause) {
    throw new ValidationError(`Error parsing YAML: ${(cause as Error).message.split('\n')[0]}`);
  }
  if (containsItself(value)) {
    throw new ValidationError(
      'Error parsing YAML: an alias refers to a node that contains it; a document must be a tree',
    );
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ValidationError('Invalid YAML format: missing kind field');
  }
  const object = value as Record<string, unknown>;
  if (object.kind === undefined || object.kind === null)
    throw new ValidationError('Invalid YAML format: missing kind field');
  if (!(typeof kind === 'string' ? [kind] : kind).includes(object.kind as string))
    throw new ValidationError(`Invalid kind ${show(object.kind)}`);
  if (object.metadata == null || object.spec == null) {
    throw new ValidationError('Invalid YAML format: missing metadata or spec');
  }
  return object;
}

/**
 * Whether a loaded value reaches itself (`config: &a {x: *a}` loads as an object that contains itself):
 * such a value has no JSON form, and every field of a document must have one.
 */
function containsItself(value: unknown, open = new Set<object>()): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (open.has(value)) return true;
  open.add(value);
  const children = value instanceof Map ? [...value.values()] : Object.values(value as object);
  const found = children.some((child) => containsItself(child, open));
  open.delete(value);
  return found;
}
