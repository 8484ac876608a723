/**
 * Which IP addresses a server may fetch from on a stranger's word (a client ID metadata document
 * URL): public unicast only. Loopback, private, link-local (cloud metadata at 169.254.169.254),
 * carrier-grade NAT, documentation, benchmarking, multicast and reserved ranges are refused, and
 * so is an IPv6 address that embeds one of them (IPv4-mapped, NAT64), however it is written.
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { ipv6Groups } from './ipv6.js';

const blockedIPv4 = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blockedIPv4.addSubnet(network, prefix, 'ipv4');

// Every public IPv6 host is in global unicast, 2000::/3, so everything outside it is refused:
// unspecified, loopback, IPv4-compatible (::/96), IPv4-translated (::ffff:0:0:0/96), NAT64
// local-use (64:ff9b:1::/48, a translator of the operator's own), discard (100::/64), unique local
// (fc00::/7), link-local, site-local (fec0::/10) and multicast. Inside it: Teredo (2001::/32) and
// 6to4 (2002::/16), tunnels whose relays could reach any IPv4 address, benchmarking and documentation.
const blockedIPv6 = new BlockList();
for (const [network, prefix] of [
  ['::', 3],
  ['4000::', 2],
  ['8000::', 1],
  ['2001::', 32],
  ['2001:2::', 48],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['3fff::', 20],
] as const)
  blockedIPv6.addSubnet(network, prefix, 'ipv6');

/**
 * The IPv4 address an IPv6 address stands for, when a public one could be behind it: IPv4-mapped
 * (::ffff:a.b.c.d, how a dual-stack resolver may answer for an IPv4 host) and NAT64's well-known
 * prefix (64:ff9b::a.b.c.d, how an IPv6-only network reaches one).
 */
function embeddedIPv4(groups: readonly number[]): string | null {
  const prefix = groups.slice(0, 6).join(':');
  if (prefix !== '0:0:0:0:0:65535' && prefix !== `${0x64}:${0xff9b}:0:0:0:0`) return null;
  const [high, low] = groups.slice(6) as [number, number];
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/** True for an address a fetch on a stranger's word must never reach. */
export function isNonPublicAddress(address: string): boolean {
  if (isIPv4(address)) return blockedIPv4.check(address, 'ipv4');
  // A zone (fe80::1%eth0) scopes an address to one link: never public.
  if (!isIPv6(address) || address.includes('%')) return true;
  const groups = ipv6Groups(address);
  const inner = embeddedIPv4(groups);
  if (inner !== null) return blockedIPv4.check(inner, 'ipv4');
  return blockedIPv6.check(groups.map((group) => group.toString(16)).join(':'), 'ipv6');
}
