export interface PortRange {
  from: number;
  to: number;
}

/** The lowest port of `range` that no claim holds, or undefined when the range is full. */
export function firstFreePort(claimed: Iterable<number>, range: PortRange): number | undefined {
  const taken = new Set(claimed);
  for (let port = range.from; port <= range.to; port++) {
    if (!taken.has(port)) return port;
  }
  return undefined;
}
