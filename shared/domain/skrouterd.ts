import type { DesiredBridges, RouterConfig } from './router-config.js';
import type { TcpConnector, TcpListener } from './router-objects.js';

/** The operator's `skrouterd.json`: a JSON array of `[type, attributes]` pairs. */
export type SkrouterdEntry = [string, Record<string, unknown>];

export class SkrouterdFormatError extends Error {
  override name = 'SkrouterdFormatError';
}

export function parseSkrouterd(text: string): SkrouterdEntry[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new SkrouterdFormatError(`skrouterd.json is not valid JSON: ${(error as Error).message}`);
  }
  if (!Array.isArray(value))
    throw new SkrouterdFormatError('skrouterd.json is not a JSON array of [type, attributes] pairs');
  for (const [index, entry] of value.entries()) {
    if (
      !Array.isArray(entry) ||
      typeof entry[0] !== 'string' ||
      entry[1] === null ||
      typeof entry[1] !== 'object'
    ) {
      throw new SkrouterdFormatError(`skrouterd.json entry ${index} is not a [type, attributes] pair`);
    }
  }
  return value as SkrouterdEntry[];
}

const managed = (entry: SkrouterdEntry) =>
  (entry[0] === 'tcpListener' && String(entry[1].name ?? '').endsWith('-listener')) ||
  (entry[0] === 'tcpConnector' && String(entry[1].name ?? '').endsWith('-connector'));

/**
 * Upserts the desired tcpListener/tcpConnector entries by name and deletes managed ones no longer
 * desired. Every other entry (router, site, sslProfile, listener, address, log, ...) and the order of
 * what stays are kept; new entries are appended.
 */
export function applyDesiredToSkrouterd(
  entries: readonly SkrouterdEntry[],
  desired: DesiredBridges,
): SkrouterdEntry[] {
  const wanted = new Map<string, SkrouterdEntry>();
  for (const listener of desired.listeners)
    wanted.set(`tcpListener/${listener.name}`, ['tcpListener', { ...listener }]);
  for (const connector of desired.connectors)
    wanted.set(`tcpConnector/${connector.name}`, ['tcpConnector', { ...connector }]);
  const result: SkrouterdEntry[] = [];
  for (const entry of entries) {
    const key = `${entry[0]}/${String(entry[1].name ?? '')}`;
    const replacement = wanted.get(key);
    if (replacement) {
      result.push(replacement);
      wanted.delete(key);
    } else if (!managed(entry)) {
      result.push(entry);
    }
  }
  return [...result, ...wanted.values()];
}

/** The bridge entries of a skrouterd.json, in the object form the rest of fogbridge speaks. */
export function skrouterdAsRouterConfig(entries: readonly SkrouterdEntry[]): RouterConfig {
  const tcpListeners: Record<string, TcpListener> = {};
  const tcpConnectors: Record<string, TcpConnector> = {};
  for (const [type, attributes] of entries) {
    if (type === 'tcpListener') tcpListeners[String(attributes.name)] = attributes as unknown as TcpListener;
    if (type === 'tcpConnector')
      tcpConnectors[String(attributes.name)] = attributes as unknown as TcpConnector;
  }
  return { bridges: { tcpListeners, tcpConnectors } };
}
