import { describe, expect, it } from 'vitest';
import { firstFreePort, type PortRange } from '../../shared/domain/bridge-ports.js';

// BRIDGE_PORTS_RANGE default 10024-65535 (seed field table, bridgePort row).
const DEFAULT_RANGE: PortRange = { from: 10024, to: 65535 };

describe('firstFreePort: "Taken from BRIDGE_PORTS_RANGE (default 10024-65535), first free port"', () => {
  it.each<[string, number[], number]>([
    ['no claims: the seed worked example is assigned 10024', [], 10024],
    ['10024 taken', [10024], 10025],
    ['first gap wins', [10024, 10025, 10027], 10026],
    ['claims in any order', [10026, 10024, 10025], 10027],
    ['a released port is reused first', [10025, 10026], 10024],
    ['claims outside the range do not matter', [80, 10023, 65536], 10024],
  ])('%s: claimed %j → %d', (_case, claimed, port) => {
    // Act / Assess
    expect(firstFreePort(claimed, DEFAULT_RANGE)).toBe(port);
  });

  it('includes the last port of the range', () => {
    // Prepare
    const claimed: number[] = [];
    for (let port = 10024; port < 65535; port++) claimed.push(port);

    // Act
    const port = firstFreePort(claimed, DEFAULT_RANGE);

    // Assess
    expect(port).toBe(65535);
  });

  it.each<[string, number[], PortRange, number | undefined]>([
    ['custom range 20000-20002, none taken', [], { from: 20000, to: 20002 }, 20000],
    ['custom range 20000-20002, all taken', [20000, 20001, 20002], { from: 20000, to: 20002 }, undefined],
    ['single-port range, free', [], { from: 30000, to: 30000 }, 30000],
    ['single-port range, taken', [30000], { from: 30000, to: 30000 }, undefined],
  ])('%s → %s', (_case, claimed, range, port) => {
    // Act / Assess
    expect(firstFreePort(claimed, range)).toBe(port);
  });

  it('accepts any iterable of claims', () => {
    // Prepare
    const claimed = new Set([10024, 10025]);

    // Act
    const port = firstFreePort(claimed.values(), DEFAULT_RANGE);

    // Assess
    expect(port).toBe(10026);
  });
});
