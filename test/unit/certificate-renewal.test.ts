import { describe, expect, it } from 'vitest';
import { caRotationDue, leafRenewal } from '../../shared/domain/certificate-renewal.js';

const DAY = 86_400_000;
const NOW = Date.parse('2031-11-01T00:00:00.000Z');
const at = (days: number) => new Date(NOW + days * DAY).toISOString();

describe('leafRenewal: renew within the window, and only when it reaches further', () => {
  it.each([
    ['far from its end', { leaf: 200, ca: 3000, lifetime: 1825 }, { renew: false, reason: 'not-due' }],
    [
      'just outside the window',
      { leaf: 30.5, ca: 3000, lifetime: 1825 },
      { renew: false, reason: 'not-due' },
    ],
    [
      'inside the window, CA lives on',
      { leaf: 29, ca: 3000, lifetime: 1825 },
      { renew: true, until: at(1825) },
    ],
    [
      'inside the window, CA ends sooner than a full lifetime',
      { leaf: 29, ca: 400, lifetime: 1825 },
      { renew: true, until: at(400) },
    ],
    [
      'inside the window, CA ends with the leaf',
      { leaf: 29, ca: 29.5, lifetime: 1825 },
      { renew: false, reason: 'ca-ends-first' },
    ],
    ['already expired, CA lives on', { leaf: -3, ca: 3000, lifetime: 365 }, { renew: true, until: at(365) }],
    ['CA expired', { leaf: -3, ca: -1, lifetime: 365 }, { renew: false, reason: 'ca-expired' }],
    [
      'CA being rotated',
      { leaf: 10, ca: 3000, lifetime: 365, rotating: true },
      { renew: false, reason: 'ca-rotating' },
    ],
    ['self-signed (no CA)', { leaf: 5, ca: undefined, lifetime: 30 }, { renew: true, until: at(30) }],
  ] as [string, { leaf: number; ca: number | undefined; lifetime: number; rotating?: boolean }, object][])(
    '%s',
    (_case, given, expected) => {
      // Act
      const decision = leafRenewal({
        leaf: { validTo: at(given.leaf) },
        ca: given.ca === undefined ? undefined : { validTo: at(given.ca), rotating: given.rotating ?? false },
        lifetimeDays: given.lifetime,
        windowDays: 30,
        now: NOW,
      });

      // Assess
      expect(decision).toEqual(expected);
    },
  );
});

describe('caRotationDue: a fleet CA is rotated within twice the window', () => {
  it.each([
    ['a year left', 365, false, false],
    ['61 days left', 61, false, false],
    ['60 days left', 60, false, true],
    ['expired', -1, false, true],
    ['already rotating', 10, true, false],
  ])('%s', (_case, days, rotating, due) => {
    // Act
    const decision = caRotationDue({ ca: { validTo: at(days), rotating }, windowDays: 30, now: NOW });

    // Assess
    expect(decision).toBe(due);
  });
});
