import { describe, expect, it } from 'vitest';
import {
  DEFAULT_DENIED_ADDRESSES,
  deniedAddress,
  isHost,
  parseAddressDenyList,
} from '../../shared/domain/hosts.js';
import { lookalikeProblem } from '../../shared/domain/lookalikes.js';

describe('isHost: what a router can dial', () => {
  it.each<[string, boolean]>([
    ['orders.example.com', true],
    ['orders.example.com.', true],
    ['localhost', true],
    ['10.0.0.5', true],
    ['2001:db8::1', true],
    ['::1', true],
    ['xn--caf-dma.example', true],
    ['.', false],
    ['...', false],
    [':::::', false],
    ['a..b', false],
    ['-orders.example.com', false],
    ['orders-.example.com', false],
    [`${'a'.repeat(64)}.example.com`, false],
    ['2852039166', false], // getaddrinfo would read it as 169.254.169.254
    ['0xa9fea9fe', false],
    ['0251.0376.0251.0376', false],
    ['1.2.3', false],
    ['256.1.1.1', false],
    ['[::1]', false], // brackets only where the caller allows them
    ['orders example', false],
  ])('%s: %s', (host, expected) => {
    // Act / Assess
    expect(isHost(host)).toBe(expected);
  });

  it.each<[string, boolean]>([
    ['[::1]', true],
    ['[2001:db8::1]', true],
    ['[[[]]]', false],
    ['[10.0.0.5]', false],
    ['[]', false],
  ])('bracketed %s: %s', (host, expected) => {
    // Act / Assess
    expect(isHost(host, { bracketed: true })).toBe(expected);
  });
});

describe('the resource address deny-list', () => {
  const defaults = parseAddressDenyList(DEFAULT_DENIED_ADDRESSES);

  it.each<[string, string | undefined]>([
    ['169.254.169.254', '169.254.0.0/16'],
    ['169.254.0.1', '169.254.0.0/16'],
    ['::ffff:169.254.169.254', '169.254.0.0/16'],
    ['fe80::1', 'fe80::/10'],
    ['[fe80::1]', 'fe80::/10'],
    ['fd00:ec2::254', 'fd00:ec2::254/128'],
    ['100.100.100.200', '100.100.100.200/32'],
    ['metadata.google.internal', 'metadata.google.internal'],
    ['METADATA.google.internal.', 'metadata.google.internal'],
    ['169.253.255.255', undefined],
    ['10.0.0.5', undefined],
    ['orders.example.com', undefined],
    ['fd00:ec2::253', undefined],
  ])('%s: denied by %s', (host, entry) => {
    // Act / Assess
    expect(deniedAddress(host, defaults)).toBe(entry);
  });

  it('denies nothing when set to none', () => {
    // Act / Assess
    expect(deniedAddress('169.254.169.254', parseAddressDenyList('none'))).toBeUndefined();
  });

  it.each([
    ['10.0.0.0/33', '"10.0.0.0/33" has a bad prefix length'],
    ['10.0.0.0/x', '"10.0.0.0/x" has a bad prefix length'],
    ['not a host!', '"not a host!" is neither an address range (CIDR) nor a host name'],
    ['example.com/8', '"example.com/8" is neither an address range (CIDR) nor a host name'],
  ])('refuses the entry %s', (value, message) => {
    // Act / Assess
    expect(() => parseAddressDenyList(value)).toThrow(message);
  });
});

describe('lookalikeProblem: names that could pass for another', () => {
  it.each<[string, string | undefined]>([
    ['edge-1', undefined],
    ['Edge Gateway 1', undefined],
    ['пример', undefined], // one script: allowed (a whole-script lookalike is not caught)
    ['東京-edge', undefined],
    ['tokyo-とうきょう-東京', undefined],
    ['서울-edge', undefined],
    ['édge', undefined],
    ['edge\u200b1', 'must not contain invisible or formatting characters (U+200B)'],
    ['edge\u202e1', 'must not contain invisible or formatting characters (U+202E)'],
    ['edge\u00ad1', 'must not contain invisible or formatting characters (U+00AD)'],
    ['\ufeffedge', 'must not contain invisible or formatting characters (U+FEFF)'],
    ['e\u0301dge', 'must be in Unicode normalization form C (NFC)'],
    ['p\u0430ypal', 'must not mix scripts (Latin and Cyrillic), which lets one name pass for another'],
    ['\u03bfrders', 'must not mix scripts (Greek and Latin), which lets one name pass for another'],
    ['서울-とうきょう', 'must not mix scripts (Hangul and Hiragana), which lets one name pass for another'],
  ])('%s: %s', (name, problem) => {
    // Act / Assess
    expect(lookalikeProblem(name)).toBe(problem);
  });
});
