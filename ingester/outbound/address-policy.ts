/**
 * Which IP addresses a guarded outgoing connection may reach (the address guard, used for
 * destinations whose URL a tenant wrote). A tenant's URL must not reach what the tenant itself
 * could not: the ingester's own loopback, the node's link-local metadata service, the cluster's
 * pod and Service ranges, the intake namespace's own Services.
 *
 * Precedence, first match decides:
 * 1. `denied` (the admin's list): refused, always.
 * 2. `allowed` (the admin's list): reachable, also inside a range refused by default.
 * 3. Refused by default: loopback, link-local, unspecified, multicast and reserved, the ingester's
 *    own addresses, and `cluster` (the pod and Service ranges; by default every private range).
 * 4. Anything else: reachable.
 *
 * Every address is held as 16 bytes, an IPv4 one in its IPv4-mapped IPv6 form (::ffff:a.b.c.d),
 * and an IPv4 range as the matching mapped range: `::ffff:127.0.0.1` is refused by `127.0.0.0/8`
 * as `127.0.0.1` is, with no second table to forget. IPv6 forms that embed an IPv4 address a
 * connection may end up at (NAT64's 64:ff9b::/96, the deprecated IPv4-compatible ::/96) are
 * checked as that IPv4 address too.
 */
import { isIP, isIPv4 } from 'node:net';

/** A range of addresses, in the 16-byte form. */
export interface Cidr {
  /** As written in the settings (or of a built-in range), named in refusals. */
  readonly text: string;
  readonly bytes: Uint8Array;
  /** Leading bits that must match (an IPv4 /8 is 104 here). */
  readonly bits: number;
}

/** Why a default range is refused, named in the refusal's reason. */
export type DefaultCategory = 'loopback' | 'link-local' | 'unspecified' | 'multicast' | 'reserved' | 'own' | 'cluster';

export type Verdict =
  | { allowed: true; by?: 'allowed' }
  | { allowed: false; by: 'denied' | DefaultCategory; range: string; address: string };

/** The built-in ranges refused unless allowed; `cluster` and `own` come from settings and the host. */
export const BUILT_IN_RANGES: ReadonlyArray<readonly [DefaultCategory, readonly string[]]> = [
  ['loopback', ['127.0.0.0/8', '::1/128']],
  ['unspecified', ['0.0.0.0/8', '::/128']],
  ['link-local', ['169.254.0.0/16', 'fe80::/10']],
  ['multicast', ['224.0.0.0/4', 'ff00::/8']],
  // 240.0.0.0/4 holds the broadcast address 255.255.255.255.
  ['reserved', ['240.0.0.0/4']],
];

/**
 * Where pod and Service addresses are unless the admin says otherwise: every private range
 * (RFC 1918, the shared 100.64.0.0/10 some clouds give pods, IPv6 unique-local). Kubernetes does
 * not tell a pod its cluster's ranges; these hold them on every distribution we know.
 */
export const DEFAULT_CLUSTER_CIDRS: readonly string[] = [
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '100.64.0.0/10',
  'fc00::/7',
];

export interface AddressPolicyRanges {
  denied: readonly string[];
  allowed: readonly string[];
  cluster: readonly string[];
  /** The ingester's own addresses and those of its namespace's Services (ownAddresses()). */
  own: readonly string[];
}

export class AddressPolicy {
  private readonly denied: Cidr[];
  private readonly allowed: Cidr[];
  private readonly defaults: Array<{ category: DefaultCategory; cidr: Cidr }> = [];

  constructor(ranges: AddressPolicyRanges) {
    this.denied = ranges.denied.map((t) => parseCidr(t));
    this.allowed = ranges.allowed.map((t) => parseCidr(t));
    for (const [category, list] of BUILT_IN_RANGES)
      for (const t of list) this.defaults.push({ category, cidr: parseCidr(t) });
    for (const t of ranges.own) this.defaults.push({ category: 'own', cidr: parseCidr(t) });
    for (const t of ranges.cluster) this.defaults.push({ category: 'cluster', cidr: parseCidr(t) });
  }

  /** Whether a connection to `address` (an IP address, as a resolver or a socket gives it) may be made. */
  check(address: string): Verdict {
    const bytes = parseAddress(address);
    if (!bytes) return { allowed: false, by: 'reserved', range: 'not an IP address', address };
    let verdict = this.decide(bytes, address);
    const embedded = embeddedIPv4(bytes);
    if (verdict.allowed && embedded) verdict = this.decide(embedded, address);
    return verdict;
  }

  private decide(bytes: Uint8Array, address: string): Verdict {
    const denied = this.denied.find((c) => contains(c, bytes));
    if (denied) return { allowed: false, by: 'denied', range: denied.text, address };
    if (this.allowed.some((c) => contains(c, bytes))) return { allowed: true, by: 'allowed' };
    const byDefault = this.defaults.find((d) => contains(d.cidr, bytes));
    if (byDefault) return { allowed: false, by: byDefault.category, range: byDefault.cidr.text, address };
    return { allowed: true };
  }
}

/** A refusal in words, for the delivery failure, the dead letter and the log. */
export function describeRefusal(host: string, v: Extract<Verdict, { allowed: false }>): string {
  const why = v.by === 'denied' ? `the denied range ${v.range}` : `${v.range} (${v.by}, refused by default)`;
  const of = host === v.address ? '' : ` (resolved from ${host})`;
  return `the address guard refused ${v.address}${of}: it is in ${why}`;
}

/** `a.b.c.d/n`, `v6/n` or a single address; throws an Error naming the text when it is not one. */
export function parseCidr(text: string): Cidr {
  const slash = text.indexOf('/');
  const addr = slash < 0 ? text : text.slice(0, slash);
  const bytes = parseAddress(addr);
  if (!bytes || addr.includes('%')) throw new Error(`${JSON.stringify(text)} is not an IP address or CIDR range`);
  const max = isIPv4(addr) ? 32 : 128;
  let bits = max;
  if (slash >= 0) {
    const p = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(p) || Number(p) > max)
      throw new Error(`${JSON.stringify(text)}: the prefix length must be 0 to ${max}`);
    bits = Number(p);
  }
  return { text, bytes, bits: max === 32 ? bits + 96 : bits };
}

/** The 16-byte form of an IPv4 or IPv6 address (a zone, `%eth0`, is left out); undefined when it is neither. */
export function parseAddress(text: string): Uint8Array | undefined {
  const unbracketed = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const address = unbracketed.split('%')[0] as string;
  const family = isIP(address);
  if (family === 4) return mapped(ipv4Bytes(address));
  if (family === 6) return ipv6Bytes(address);
  return undefined;
}

/** Whether the leading `cidr.bits` bits of `bytes` are those of the range. */
export function contains(cidr: Cidr, bytes: Uint8Array): boolean {
  const whole = cidr.bits >> 3;
  for (let i = 0; i < whole; i++) if (cidr.bytes[i] !== bytes[i]) return false;
  const rest = cidr.bits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((cidr.bytes[whole] as number) & mask) === ((bytes[whole] as number) & mask);
}

function ipv4Bytes(text: string): number[] {
  return text.split('.').map(Number);
}

function mapped(v4: readonly number[]): Uint8Array {
  const b = new Uint8Array(16);
  b[10] = 0xff;
  b[11] = 0xff;
  b.set(v4, 12);
  return b;
}

/** A valid IPv6 address (isIP said so) as 16 bytes: `::` expanded, a trailing dotted IPv4 part read. */
function ipv6Bytes(text: string): Uint8Array {
  let head = text;
  let tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.', lastColon)) {
    const v4 = ipv4Bytes(text.slice(lastColon + 1));
    tail = [((v4[0] as number) << 8) | (v4[1] as number), ((v4[2] as number) << 8) | (v4[3] as number)];
    head = text.slice(0, lastColon + 1) + '0';
  }
  const groups = (s: string): number[] => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const gap = head.indexOf('::');
  let words: number[];
  if (gap < 0) words = groups(head);
  else {
    const left = groups(head.slice(0, gap));
    const right = groups(head.slice(gap + 2));
    words = [
      ...left,
      ...new Array<number>(8 - left.length - right.length - (tail.length > 0 ? 1 : 0)).fill(0),
      ...right,
    ];
  }
  if (tail.length > 0) words = [...words.slice(0, -1), ...tail];
  const b = new Uint8Array(16);
  words.forEach((w, i) => {
    b[2 * i] = w >> 8;
    b[2 * i + 1] = w & 0xff;
  });
  return b;
}

const NAT64 = parseCidr('64:ff9b::/96');
const IPV4_COMPATIBLE = parseCidr('::/96');

/** The IPv4 address a NAT64 or IPv4-compatible form leads to, mapped; undefined for any other address. */
function embeddedIPv4(bytes: Uint8Array): Uint8Array | undefined {
  if (contains(NAT64, bytes)) return mapped([...bytes.subarray(12)]);
  // :: and ::1 are the unspecified and loopback addresses, not IPv4-compatible forms.
  if (!contains(IPV4_COMPATIBLE, bytes) || (bytes[12] === 0 && bytes[13] === 0 && bytes[14] === 0)) return undefined;
  return mapped([...bytes.subarray(12)]);
}
