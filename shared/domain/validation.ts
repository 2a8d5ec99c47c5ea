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

/** A value as it appears in a message: short, quoted, never a whole document. */
export function show(value: unknown): string {
  let text: string;
  if (typeof value === 'string') text = JSON.stringify(value);
  else if (value === undefined) text = 'nothing';
  else {
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = String(value);
    }
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
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
