import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isNonPublicAddress } from '../../src/core/addresses.js';

/** Each address with whether a fetch on a stranger's word may reach it. */
function expect(table: ReadonlyArray<readonly [string, 'public' | 'blocked']>): void {
  for (const [address, verdict] of table) assert.equal(isNonPublicAddress(address), verdict === 'blocked', `${address} should be ${verdict}`);
}

describe("addresses a fetch on a stranger's word may reach", () => {
  it('public unicast only', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '2606:4700::1111', '::ffff:8.8.8.8']) assert.equal(isNonPublicAddress(address), false, address);
  });
  it('never loopback, private, link-local (cloud metadata), CGNAT, reserved or multicast, nor IPv6 forms of them', () => {
    for (const address of [
      '127.0.0.1',
      '127.1.2.3',
      '10.1.2.3',
      '172.16.5.4',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '198.18.0.1',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'fd12:3456::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:a9fe:a9fe',
      '64:ff9b::a00:1',
      'not an address',
    ])
      assert.equal(isNonPublicAddress(address), true, address);
  });

  it('an IPv6 address that embeds an IPv4 address is judged by it, however it is written', () => {
    expect([
      // IPv4-mapped (::ffff:0:0/96): what a dual-stack resolver may answer for an IPv4 host.
      ['::ffff:8.8.8.8', 'public'],
      ['::ffff:808:808', 'public'],
      ['0:0:0:0:0:ffff:808:808', 'public'],
      ['::FFFF:808:808', 'public'],
      ['::ffff:127.0.0.1', 'blocked'],
      ['::ffff:7f00:1', 'blocked'],
      ['0:0:0:0:0:ffff:7f00:1', 'blocked'],
      ['0:0:0:0:0:ffff:127.0.0.1', 'blocked'],
      ['::ffff:169.254.169.254', 'blocked'],
      ['::ffff:a9fe:a9fe', 'blocked'],
      ['::ffff:10.0.0.1', 'blocked'],
      ['::ffff:a00:1', 'blocked'],
      // NAT64 well-known prefix (64:ff9b::/96): an IPv6-only network's way to any IPv4 host.
      ['64:ff9b::8.8.8.8', 'public'],
      ['64:ff9b::808:808', 'public'],
      ['64:ff9b:0:0:0:0:808:808', 'public'],
      ['64:ff9b::127.0.0.1', 'blocked'],
      ['64:ff9b::7f00:1', 'blocked'],
      ['64:ff9b:0:0:0:0:7f00:1', 'blocked'],
      ['0064:ff9b::7f00:1', 'blocked'],
      ['64:ff9b::169.254.169.254', 'blocked'],
      ['64:ff9b::a9fe:a9fe', 'blocked'],
      ['64:ff9b::192.168.0.1', 'blocked'],
      ['64:ff9b::c0a8:1', 'blocked'],
    ]);
  });

  it('never the IPv6 ranges no public host lives in, whatever IPv4 address they carry', () => {
    expect([
      // IPv4-compatible (::/96), deprecated.
      ['::8.8.8.8', 'blocked'],
      ['::808:808', 'blocked'],
      ['::127.0.0.1', 'blocked'],
      ['::7f00:1', 'blocked'],
      ['0:0:0:0:0:0:a9fe:a9fe', 'blocked'],
      // IPv4-translated (::ffff:0:0:0/96).
      ['::ffff:0:8.8.8.8', 'blocked'],
      ['::ffff:0:808:808', 'blocked'],
      ['::ffff:0:127.0.0.1', 'blocked'],
      ['::ffff:0:7f00:1', 'blocked'],
      ['0:0:0:0:ffff:0:a9fe:a9fe', 'blocked'],
      // NAT64 local-use (64:ff9b:1::/48): a translator of the operator's own.
      ['64:ff9b:1::8.8.8.8', 'blocked'],
      ['64:ff9b:1::808:808', 'blocked'],
      ['64:ff9b:1::10.0.0.1', 'blocked'],
      ['64:ff9b:1:ffff::a00:1', 'blocked'],
      // Site-local (fec0::/10), deprecated but still routed inside some networks.
      ['fec0::1', 'blocked'],
      ['fec0:0:0:ffff::1', 'blocked'],
      ['feff::1', 'blocked'],
      // 6to4 (2002::/16) and Teredo (2001::/32): tunnels, refused whole.
      ['2002:808:808::1', 'blocked'],
      ['2002:7f00:1::1', 'blocked'],
      ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'blocked'],
      ['2001::1', 'blocked'],
      // Documentation and benchmarking, as for IPv4.
      ['2001:db8::1', 'blocked'],
      ['3fff::1', 'blocked'],
      ['2001:2::1', 'blocked'],
      // A zone means an address scoped to one link.
      ['fe80::1%eth0', 'blocked'],
      ['2606:4700::1111%1', 'blocked'],
    ]);
  });

  it('global unicast IPv6 stays reachable', () => {
    expect([
      ['2606:4700::1111', 'public'],
      ['2a00:1450:4001:82a::200e', 'public'],
      ['2001:4860:4860::8888', 'public'],
      ['2400:cb00::1', 'public'],
    ]);
  });
});
