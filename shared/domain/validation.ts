import type { z } from 'zod';
import { ValidationError } from '../errors.js';

/**
 * Turns the first zod issue into a ValidationError whose message names the field and the value the
 * user sent, in the reference controller's wording where it has one.
 */
export function firstIssueAsError(
  issues: readonly z.core.$ZodIssue[],
  input: unknown,
  prefix = '',
): ValidationError {
  const issue = issues[0];
  if (!issue) return new ValidationError('Invalid request');
  const path = [...prefix.split('.').filter(Boolean), ...issue.path.map(String)];
  const value = valueAt(input, issue.path);
  const field = path.join('.');
  switch (issue.code) {
    case 'unrecognized_keys': {
      const key = issue.keys[0]!;
      return new ValidationError(`Unknown field '${[...path, key].join('.')}'`);
    }
    case 'invalid_type':
      if (value === undefined) return new ValidationError(`Required field '${field}' is missing`);
      return new ValidationError(`Field '${field}' must be ${article(issue.expected)}, got ${show(value)}`);
    case 'invalid_value':
      if (value === undefined) return new ValidationError(`Required field '${field}' is missing`);
      return new ValidationError(
        `Field '${field}' is not one of enum values: ${issue.values.map(String).join(',')} (got ${show(value)})`,
      );
    case 'too_small':
    case 'too_big':
      if (issue.origin === 'number' || issue.origin === 'int') {
        return new ValidationError(`Field '${field}' must be ${numberBounds(issue)}, got ${show(value)}`);
      }
      return new ValidationError(`Field '${field}' ${issue.message}, got ${show(value)}`);
    case 'invalid_format':
      return new ValidationError(`Invalid format for field '${field}': ${show(value)} ${issue.message}`);
    case 'custom':
      return new ValidationError(`Field '${field}' ${issue.message}, got ${show(value)}`);
    case 'invalid_union': {
      if (value === undefined) return new ValidationError(`Required field '${field}' is missing`);
      // The branch whose type the value has tells what is wrong with it; if none has, name the types.
      const firsts = issue.errors.map((branch) => branch[0]);
      const matching = firsts.find((first) => first && first.code !== 'invalid_type');
      if (matching)
        return firstIssueAsError([{ ...matching, path: [...issue.path, ...matching.path] }], input, prefix);
      const types = firsts.flatMap((first) =>
        first?.code === 'invalid_type' ? [article(first.expected)] : [],
      );
      return new ValidationError(`Field '${field}' must be ${types.join(' or ')}, got ${show(value)}`);
    }
    default:
      return new ValidationError(`Field '${field}': ${issue.message} (got ${show(value)})`);
  }
}

/** A validated body and the fields it carried that the schema does not model (ignored). */
export interface Parsed<T> {
  value: T;
  unknownFields: string[];
}

/**
 * Validates `input` the way Kubernetes does in its "warn" field-validation mode: a field the schema does
 * not model is ignored and reported in `unknownFields` (dotted paths, under `prefix`); a modelled field
 * with a bad value is the first problem, thrown as a ValidationError naming the field and the value.
 */
export function parseBody<S extends z.ZodType>(schema: S, input: unknown, prefix = ''): Parsed<z.output<S>> {
  const first = schema.safeParse(input);
  if (first.success) return { value: first.data, unknownFields: [] };
  const unknown = first.error.issues.filter(
    (issue): issue is z.core.$ZodIssueUnrecognizedKeys => issue.code === 'unrecognized_keys',
  );
  const problems = first.error.issues.filter((issue) => issue.code !== 'unrecognized_keys');
  if (problems.length > 0) throw firstIssueAsError(problems, input, prefix);
  const stripped = withoutUnknownKeys(input, unknown);
  const second = schema.safeParse(stripped);
  if (!second.success) throw firstIssueAsError(second.error.issues, stripped, prefix);
  const base = prefix.split('.').filter(Boolean);
  return {
    value: second.data,
    unknownFields: unknown.flatMap((issue) =>
      issue.keys.map((key) => [...base, ...issue.path.map(String), key].join('.')),
    ),
  };
}

/** Strict validation: an unknown field is a problem too (for bodies fogbridge itself writes and reads). */
export function parseWith<S extends z.ZodType>(schema: S, input: unknown, prefix = ''): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw firstIssueAsError(result.error.issues, input, prefix);
  return result.data;
}

/** A copy of `input` without the keys the issues name; only the objects on those paths are copied. */
function withoutUnknownKeys(input: unknown, issues: readonly z.core.$ZodIssueUnrecognizedKeys[]): unknown {
  const root = { value: input };
  for (const issue of issues) {
    let holder: Record<PropertyKey, unknown> = root;
    let key: PropertyKey = 'value';
    for (const step of issue.path) {
      const child = holder[key];
      const copy = Array.isArray(child) ? [...child] : { ...(child as object) };
      holder[key] = copy;
      holder = copy as Record<PropertyKey, unknown>;
      key = step;
    }
    const target = Array.isArray(holder[key])
      ? [...(holder[key] as unknown[])]
      : { ...(holder[key] as object) };
    for (const name of issue.keys) delete (target as Record<string, unknown>)[name];
    holder[key] = target;
  }
  return root.value;
}

/** A zod check that refuses identifiers `reason` reserves (the reason becomes the message). */
export function refuseReserved(reason: (value: string) => string | undefined) {
  return (value: string, context: z.RefinementCtx) => {
    const reserved = reason(value);
    if (reserved) context.addIssue({ code: 'custom', message: reserved });
  };
}

/** Longest value quoted in a message. */
const SHOWN_CHARACTERS = 80;

/**
 * A value as it appears in a message: short, JSON-like, never a whole document. It is rendered within a
 * character budget and a depth limit, so a 10,000-deep array costs as much as a short one.
 */
export function show(value: unknown): string {
  if (value === undefined) return 'nothing';
  const text = render(value, SHOWN_CHARACTERS + 1, 0);
  return text.length > SHOWN_CHARACTERS ? `${text.slice(0, SHOWN_CHARACTERS - 3)}...` : text;
}

const MAX_SHOWN_DEPTH = 8;
/** Characters a message spells out, so that what a client sent is what the reader sees. */
const INVISIBLE = /[\p{Cf}\p{Zl}\p{Zp}]/gu;

function render(value: unknown, budget: number, depth: number): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > budget ? value.slice(0, budget) : value).replace(
      INVISIBLE,
      (character) => `\\u${character.codePointAt(0)!.toString(16).padStart(4, '0')}`,
    );
  if (typeof value === 'number') return Number.isFinite(value) ? JSON.stringify(value) : String(value);
  if (value === null || typeof value !== 'object') return String(value);
  if (depth >= MAX_SHOWN_DEPTH) return Array.isArray(value) ? '[...]' : '{...}';
  const isArray = Array.isArray(value);
  const keys = isArray ? undefined : Object.keys(value);
  const length = isArray ? value.length : keys!.length;
  let text = isArray ? '[' : '{';
  for (let index = 0; index < length && text.length <= budget; index++) {
    const key = isArray ? '' : `${JSON.stringify(keys![index])}:`;
    const item = isArray ? value[index] : (value as Record<string, unknown>)[keys![index]!];
    text += `${index > 0 ? ',' : ''}${key}${render(item, budget - text.length, depth + 1)}`;
  }
  const close = isArray ? ']' : '}';
  return `${text}${close}`;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let current = input;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

function article(expected: string): string {
  return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
}

function numberBounds(issue: z.core.$ZodIssueTooSmall | z.core.$ZodIssueTooBig): string {
  return issue.code === 'too_small'
    ? `${issue.inclusive === false ? 'greater than' : 'at least'} ${String(issue.minimum)}`
    : `${issue.inclusive === false ? 'less than' : 'at most'} ${String(issue.maximum)}`;
}
