/**
 * What Go's `encoding/json` Unmarshal does with a response body, for the Go SDK's structs: JSON keys
 * match struct fields case-insensitively, unknown keys are ignored, `null` leaves a field at its zero
 * value, and a value of the wrong JSON type fails the whole decode (`json: cannot unmarshal ...`). A
 * struct is described by its JSON tags and Go types, copied from the SDK's source.
 */
export type GoType =
  | 'string'
  | 'int'
  | 'float'
  | 'bool'
  | 'any'
  /** time.Time: an RFC 3339 string (its UnmarshalJSON refuses anything else). */
  | 'time'
  | { slice: GoType }
  | { map: GoType }
  | { struct: GoStruct };
export type GoStruct = Record<string, GoType>;

export class UnmarshalError extends Error {}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value === 'object' ? 'object' : typeof value;
}

/** Throws UnmarshalError where `json.Unmarshal` would; `path` names the field as Go does. */
export function goUnmarshal(value: unknown, type: GoType, path = 'value'): void {
  if (value === null || type === 'any') return;
  const fail = (expected: string) => {
    throw new UnmarshalError(
      `json: cannot unmarshal ${describe(value)} into Go struct field ${path} of type ${expected}`,
    );
  };
  if (type === 'string') {
    if (typeof value !== 'string') fail('string');
  } else if (type === 'time') {
    if (
      typeof value !== 'string' ||
      !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value)
    )
      fail('time.Time');
  } else if (type === 'bool') {
    if (typeof value !== 'boolean') fail('bool');
  } else if (type === 'int') {
    if (typeof value !== 'number' || !Number.isInteger(value)) fail('int64');
  } else if (type === 'float') {
    if (typeof value !== 'number') fail('float64');
  } else if ('slice' in type) {
    if (!Array.isArray(value)) fail('[]');
    (value as unknown[]).forEach((item, index) => {
      goUnmarshal(item, type.slice, `${path}[${index}]`);
    });
  } else if ('map' in type) {
    if (describe(value) !== 'object') fail('map');
    for (const [key, item] of Object.entries(value as object)) goUnmarshal(item, type.map, `${path}.${key}`);
  } else {
    if (describe(value) !== 'object') fail('struct');
    const fields = Object.entries(type.struct);
    for (const [key, item] of Object.entries(value as object)) {
      const field = fields.find(([tag]) => tag.toLowerCase() === key.toLowerCase());
      if (field) goUnmarshal(item, field[1], `${path}.${field[0]}`);
    }
  }
}
