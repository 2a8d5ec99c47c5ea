import { BlockList, isIP } from 'node:net';
import { z } from 'zod';

/**
 * Host names and addresses as a router dials them. A router resolves a host with getaddrinfo, which
 * also reads `2852039166`, `0xa9fea9fe` or `0251.0376.0251.0376` as IPv4 addresses; so a name whose last
 * label is numeric or hexadecimal is not a name (RFC 3696 §2 keeps top-level labels non-numeric), and
 * an address is only what `isIP` calls one.
 */
const LABEL = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const NUMERIC_LABEL = /^(\d+|0x[0-9a-f]*)$/i;

export function isHostName(value: string): boolean {
  const name = value.endsWith('.') ? value.slice(0, -1) : value;
  if (name.length === 0 || name.length > 253) return false;
  const labels = name.split('.');
  return labels.every((label) => LABEL.test(label)) && !NUMERIC_LABEL.test(labels.at(-1)!);
}

/**
 * A DNS name, an IPv4 address or an IPv6 address (bracketed too, when `bracketed` allows it). An IPv6
 * zone (`fe80::1%eth0`) names an interface of one host: other hosts cannot dial it, and a certificate
 * cannot carry it.
 */
export function isHost(value: string, options: { bracketed?: boolean } = {}): boolean {
  if (value.includes('%')) return false;
  if (options.bracketed && value.startsWith('[') && value.endsWith(']'))
    return isIP(value.slice(1, -1)) === 6;
  return isIP(value) !== 0 || isHostName(value);
}

/**
 * The one rule for a host another router or NATS server dials (an agent's host, the default router's,
 * the NATS hub's): a DNS name of labels of at most 63 characters, or an IP address (IPv6 bracketed or
 * not), without a zone.
 */
export const dialledHost = z.string().refine((value) => isHost(value, { bracketed: true }), {
  message: 'must be a DNS name or an IP address',
});

/** Addresses a router must not be pointed at: ranges (CIDR) and host names. */
export interface AddressDenyList {
  ranges: readonly { entry: string; list: BlockList }[];
  names: ReadonlySet<string>;
}

/** Link-local (the cloud metadata endpoints live there) and the providers' other metadata addresses. */
export const DEFAULT_DENIED_ADDRESSES =
  '169.254.0.0/16,fe80::/10,fd00:ec2::254/128,100.100.100.200/32,metadata.google.internal';

const familyOf = (address: string) => (isIP(address) === 4 ? 'ipv4' : 'ipv6');

/** Parses `a.b.c.d/n, x::/n, name, ...`; `none` (or nothing) denies nothing. Throws naming a bad entry. */
export function parseAddressDenyList(value: string): AddressDenyList {
  const entries = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0 && entry.toLowerCase() !== 'none');
  const ranges: { entry: string; list: BlockList }[] = [];
  const names = new Set<string>();
  for (const entry of entries) {
    const [address, prefix, extra] = entry.split('/') as [string, string | undefined, string | undefined];
    const width = isIP(address) === 4 ? 32 : 128;
    if (isIP(address) !== 0 && extra === undefined) {
      const bits = prefix === undefined ? width : Number(prefix);
      if (!/^\d{1,3}$/.test(prefix ?? '0') || bits > width)
        throw new Error(`${JSON.stringify(entry)} has a bad prefix length`);
      const list = new BlockList();
      list.addSubnet(address, bits, familyOf(address));
      ranges.push({ entry, list });
    } else if (prefix === undefined && isHostName(entry)) {
      names.add(entry.toLowerCase().replace(/\.$/, ''));
    } else {
      throw new Error(`${JSON.stringify(entry)} is neither an address range (CIDR) nor a host name`);
    }
  }
  return { ranges, names };
}

/** The deny-list entry `host` falls under, or undefined when a router may dial it. */
export function deniedAddress(host: string, denied: AddressDenyList): string | undefined {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (isIP(bare) !== 0) return denied.ranges.find(({ list }) => list.check(bare, familyOf(bare)))?.entry;
  const name = bare.toLowerCase().replace(/\.$/, '');
  return denied.names.has(name) ? name : undefined;
}
