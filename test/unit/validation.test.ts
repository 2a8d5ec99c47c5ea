import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { firstIssueAsError, parseWith, refuseReserved, show } from '../../shared/domain/validation.js';
import { ValidationError } from '../../shared/errors.js';

const schema = z.strictObject({
  name: z.string(),
  port: z.number().min(1).max(65535),
  mode: z.enum(['edge', 'interior']),
  tags: z.array(z.string()).max(2, 'must hold at most 2 tags'),
  host: z.string().refine((value) => !value.includes(' '), { message: 'must not contain spaces' }),
  counter: z.union([z.string().regex(/^\d+$/, 'must be digits'), z.number()]).optional(),
  id: z
    .string()
    .superRefine(
      refuseReserved((value) =>
        value === 'default-router' ? 'is reserved: default-router is taken' : undefined,
      ),
    )
    .optional(),
});

const valid = { name: 'checkout', port: 8080, mode: 'edge', tags: ['checkout'], host: 'orders.checkout' };

describe('parseWith / firstIssueAsError: messages name the field and the value', () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['unknown key', { extra: 1 }, "Unknown field 'extra'"],
    ['wrong type', { name: 42 }, "Field 'name' must be a string, got 42"],
    ['below the minimum', { port: 0 }, "Field 'port' must be at least 1, got 0"],
    ['above the maximum', { port: 70000 }, "Field 'port' must be at most 65535, got 70000"],
    ['enum', { mode: 'none' }, `Field 'mode' is not one of enum values: edge,interior (got "none")`],
    ['array too long', { tags: ['a', 'b', 'c'] }, `Field 'tags' must hold at most 2 tags, got ["a","b","c"]`],
    ['nested element type', { tags: ['a', 7] }, "Field 'tags.1' must be a string, got 7"],
    ['custom refinement', { host: 'a b' }, `Field 'host' must not contain spaces, got "a b"`],
    [
      'union, a type neither branch takes',
      { counter: [1] },
      "Field 'counter' must be a string or a number, got [1]",
    ],
    [
      'union, the branch of its type refuses it',
      { counter: 'abc' },
      `Invalid format for field 'counter': "abc" must be digits`,
    ],
    [
      'a reserved identifier',
      { id: 'default-router' },
      `Field 'id' is reserved: default-router is taken, got "default-router"`,
    ],
  ])('%s', (_case, change, message) => {
    // Act / Assess
    expect(() => parseWith(schema, { ...valid, ...change })).toThrow(new ValidationError(message));
  });

  it('reports a missing field as missing', () => {
    // Prepare
    const { name: _name, ...withoutName } = valid;

    // Act / Assess
    expect(() => parseWith(schema, withoutName)).toThrow(
      new ValidationError("Required field 'name' is missing"),
    );
  });

  it('puts a prefix in front of the field path', () => {
    // Act / Assess
    expect(() => parseWith(schema, { ...valid, port: 0 }, 'spec')).toThrow(
      new ValidationError("Field 'spec.port' must be at least 1, got 0"),
    );
  });

  it('returns the parsed value when valid', () => {
    // Act / Assess
    expect(parseWith(schema, valid)).toStrictEqual(valid);
  });

  it('falls back to "Invalid request" with no issue', () => {
    // Act
    const error = firstIssueAsError([], {});

    // Assess
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.message).toBe('Invalid request');
  });
});

function deepArray(depth: number): unknown {
  let value: unknown = 1;
  for (let level = 0; level < depth; level++) value = [value];
  return value;
}

describe('show', () => {
  it.each<[string, unknown, string]>([
    ['a string, quoted', 'checkout', '"checkout"'],
    ['a number', 8080, '8080'],
    ['undefined as nothing', undefined, 'nothing'],
    ['null', null, 'null'],
    ['an object as JSON', { a: 1 }, '{"a":1}'],
    ['a long value, cut at 80 characters', 'x'.repeat(100), `"${'x'.repeat(76)}...`],
    ['Infinity (JSON would say null)', Number.POSITIVE_INFINITY, 'Infinity'],
    ['-Infinity', Number.NEGATIVE_INFINITY, '-Infinity'],
    ['NaN', Number.NaN, 'NaN'],
    ['a bigint', 10n, '10'],
    ['a nested object as JSON', { a: { b: [1, 'two'] } }, '{"a":{"b":[1,"two"]}}'],
    ['nesting past eight levels, elided', [[[[[[[[[[1]]]]]]]]]], '[[[[[[[[[...]]]]]]]]]'],
    ['a 10,000-deep array, without overflowing the stack', deepArray(10_000), '[[[[[[[[[...]]]]]]]]]'],
    [
      'a million-element array, within the budget',
      Array.from({ length: 1_000_000 }, () => 7),
      `[${'7,'.repeat(38)}...`,
    ],
    ['a zero-width space, spelled out', 'a\u200bb', '"a\\u200bb"'],
    ['a right-to-left override, spelled out', 'a\u202eb', '"a\\u202eb"'],
  ])('shows %s', (_case, value, shown) => {
    // Act / Assess
    expect(show(value)).toBe(shown);
  });
});
