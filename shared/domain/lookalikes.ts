/**
 * What makes one name pass for another: characters that do not show (zero-width, bidi controls, other
 * format characters), text that is not in its canonical Unicode form, and letters of two scripts mixed
 * in one name (a Cyrillic "а" among Latin letters). The rules follow UTS #39's "highly restrictive"
 * level: one script, or Latin with the Han-based combinations Japanese, Chinese and Korean names use.
 * Whole-script lookalikes (a name entirely in Cyrillic that reads as Latin) remain possible.
 */

const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}]/u;

/** Scripts told apart; a letter of any other script counts as its own. */
const SCRIPTS = [
  'Latin',
  'Cyrillic',
  'Greek',
  'Armenian',
  'Georgian',
  'Hebrew',
  'Arabic',
  'Syriac',
  'Thaana',
  'Devanagari',
  'Bengali',
  'Gurmukhi',
  'Gujarati',
  'Oriya',
  'Tamil',
  'Telugu',
  'Kannada',
  'Malayalam',
  'Sinhala',
  'Thai',
  'Lao',
  'Tibetan',
  'Myanmar',
  'Khmer',
  'Mongolian',
  'Ethiopic',
  'Cherokee',
  'Han',
  'Hiragana',
  'Katakana',
  'Hangul',
  'Bopomofo',
].map((name) => ({ name, pattern: new RegExp(`\\p{Script=${name}}`, 'u') }));

const NEUTRAL = /[\p{Script=Common}\p{Script=Inherited}]/u;

/** Script sets a single name may combine (besides any one script alone). */
const ALLOWED_MIXES = [
  ['Latin', 'Han', 'Hiragana', 'Katakana'],
  ['Latin', 'Han', 'Bopomofo'],
  ['Latin', 'Han', 'Hangul'],
];

function scriptOf(character: string): string | undefined {
  if (NEUTRAL.test(character)) return undefined;
  return (
    SCRIPTS.find(({ pattern }) => pattern.test(character))?.name ??
    `U+${character.codePointAt(0)!.toString(16)}`
  );
}

/** Why `name` could pass for another name, or undefined when it cannot (beyond whole-script lookalikes). */
/** Why text holds a control, invisible or formatting character (naming it), or undefined. */
export function invisibleCharacter(text: string): string | undefined {
  const invisible = INVISIBLE.exec(text);
  return invisible
    ? `must not contain invisible or formatting characters (U+${invisible[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')})`
    : undefined;
}

export function lookalikeProblem(name: string): string | undefined {
  const invisible = invisibleCharacter(name);
  if (invisible) return invisible;
  if (name.normalize('NFC') !== name) return 'must be in Unicode normalization form C (NFC)';
  const scripts = new Set<string>();
  for (const character of name) {
    const script = scriptOf(character);
    if (script) scripts.add(script);
  }
  if (scripts.size <= 1 || ALLOWED_MIXES.some((mix) => [...scripts].every((script) => mix.includes(script))))
    return undefined;
  return `must not mix scripts (${[...scripts].join(' and ')}), which lets one name pass for another`;
}
