/**
 * Whose request it is, for limits per client address: the socket's peer, or, only when that peer
 * is a proxy the operator named, the address the proxies say they forwarded for.
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { ipv6Groups } from './ipv6.js';

/** 1.2.3.4 for ::ffff:1.2.3.4 (a dual-stack socket's IPv4 peer); a zone (%eth0) dropped; lower case. */
function plain(address: string): string {
  const bare = address.trim().replace(/%.*$/, '').toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(bare);
  return mapped ? mapped[1]! : bare;
}

/**
 * The bucket an address spends from: an IPv4 address as it is; an IPv6 address by its /64, the
 * network one subscriber is given, or anyone could rotate through 2^64 addresses for free.
 * Anything that is not an address (a misconfigured caller) stands for itself.
 */
export function addressBucket(address: string): string {
  const ip = plain(address);
  // isIPv6 is a long regular expression, run at every request: an IPv4 address has no colon.
  if (!ip.includes(':') || !isIPv6(ip)) return ip;
  return `${ipv6Groups(ip)
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}

/** The operator's trusted proxies: addresses and CIDR ranges, IPv4 or IPv6. Throws on anything else. */
export function trustedProxies(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address = '', prefix, extra] = entry.trim().split('/');
    const ip = plain(address);
    const type = isIPv4(ip) ? 'ipv4' : isIPv6(ip) ? 'ipv6' : null;
    const bits = prefix === undefined ? (type === 'ipv4' ? 32 : 128) : /^\d{1,3}$/.test(prefix) ? Number(prefix) : NaN;
    if (!type || extra !== undefined || !(bits >= 0 && bits <= (type === 'ipv4' ? 32 : 128))) {
      throw new Error(`trustProxy: ${JSON.stringify(entry)} is not an IP address or CIDR range`);
    }
    list.addSubnet(ip, bits, type);
  }
  return list;
}

function isTrusted(list: BlockList, address: string): boolean {
  if (isIPv4(address)) return list.check(address, 'ipv4');
  return isIPv6(address) && list.check(address, 'ipv6');
}

/** One X-Forwarded-For element as an address: "[2001:db8::1]:443" and "192.0.2.1:443" lose the port. */
function hop(element: string): string | null {
  let text = element.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text);
  if (bracketed) text = bracketed[1]!;
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(text)) text = text.slice(0, text.indexOf(':'));
  const ip = plain(text);
  return isIPv4(ip) || isIPv6(ip) ? ip : null;
}

/**
 * The client's address. When the peer is a trusted proxy, X-Forwarded-For is read from the right
 * (each proxy appends the address it received from): the first hop that is not itself a trusted
 * proxy is the client. Anything left of it was written by the client and could say anything. A
 * hop that is not an address ends the walk at the proxy that passed it on. Without trusted
 * proxies, or from any other peer, the header is ignored.
 */
export function forwardedClientAddress(peer: string | undefined, forwardedFor: string | null, trusted: BlockList): string | undefined {
  if (peer === undefined) return undefined;
  let client = plain(peer);
  if (!isTrusted(trusted, client) || !forwardedFor) return client;
  const hops = forwardedFor.split(',');
  for (let i = hops.length - 1; i >= 0; i--) {
    const address = hop(hops[i]!);
    if (address === null) return client;
    client = address;
    if (!isTrusted(trusted, client)) return client;
  }
  return client;
}
