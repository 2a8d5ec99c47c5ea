import { z } from 'zod';

const s = z.strictObject({
  a: z.number(),
  b: z.strictObject({ c: z.string() }).optional(),
  d: z.array(z.strictObject({ e: z.number() })).optional(),
});
console.log(JSON.stringify(s.safeParse({ a: 'x', q: 1, b: { c: 1, r: 2 } }).error?.issues));
console.log(
  JSON.stringify(s.safeParse({ a: 1, q: 1, b: { c: 's', r: 2 }, d: [{ e: 1, f: 2 }] }).error?.issues),
);
