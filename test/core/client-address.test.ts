/**
 * Whose request it is: the bucket an address spends from (IPv6 by /64), and X-Forwarded-For,
 * believed only from a trusted proxy and read from the right.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addressBucket, forwardedClientAddress, trustedProxies } from '../../src/core/client-address.js';

describe('addressBucket', () => {
  it('IPv4 as it is; IPv4-mapped IPv6 as IPv4', () => {
    assert.equal(addressBucket('203.0.113.9'), '203.0.113.9');
    assert.equal(addressBucket('::ffff:203.0.113.9'), '203.0.113.9');
  });

  it('IPv6 by its /64, however it is written', () => {
    const bucket = '2001:db8:1:2::/64';
    for (const address of [
      '2001:db8:1:2::1',
      '2001:db8:1:2:ffff:ffff:ffff:ffff',
      '2001:0DB8:0001:0002:0:0:0:7',
      '2001:db8:1:2::1%eth0',
      '2001:db8:1:2::192.0.2.1',
    ]) {
      assert.equal(addressBucket(address), bucket, address);
    }
    assert.notEqual(addressBucket('2001:db8:1:3::1'), bucket);
    assert.equal(addressBucket('::1'), '0:0:0:0::/64');
    assert.equal(addressBucket('fe80::1'), 'fe80:0:0:0::/64');
  });
});

describe('trustedProxies', () => {
  it('takes addresses and CIDR ranges of both families; refuses anything else', () => {
    const list = trustedProxies(['10.0.0.0/8', '192.0.2.7', '2001:db8::/32', '::1']);
    assert.ok(list.check('10.1.2.3', 'ipv4'));
    assert.ok(list.check('192.0.2.7', 'ipv4'));
    assert.ok(!list.check('192.0.2.8', 'ipv4'));
    assert.ok(list.check('2001:db8:ffff::1', 'ipv6'));
    for (const bad of ['proxy.example', '10.0.0.0/33', '10.0.0.0/8/8', '::1/129', '', '10.0.0.0/x']) {
      assert.throws(() => trustedProxies([bad]), /not an IP address or CIDR range/, bad);
    }
  });
});

describe('forwardedClientAddress', () => {
  const trusted = trustedProxies(['10.0.0.0/8', '::1']);

  it('never reads the header when the peer is not a trusted proxy (the default: no trusted proxies)', () => {
    assert.equal(forwardedClientAddress('203.0.113.9', '198.51.100.1', trusted), '203.0.113.9');
    assert.equal(forwardedClientAddress('10.0.0.2', '198.51.100.1', trustedProxies([])), '10.0.0.2');
  });

  it('from a trusted proxy: the rightmost hop that is not itself a trusted proxy', () => {
    assert.equal(forwardedClientAddress('10.0.0.2', '198.51.100.1', trusted), '198.51.100.1');
    // The client wrote "1.2.3.4" itself; our proxies appended the real address after it.
    assert.equal(forwardedClientAddress('10.0.0.2', '1.2.3.4, 198.51.100.1, 10.0.0.3', trusted), '198.51.100.1');
    assert.equal(forwardedClientAddress('::ffff:10.0.0.2', '198.51.100.1', trusted), '198.51.100.1', "a dual-stack socket's IPv4 peer");
    assert.equal(forwardedClientAddress('::1', '[2001:db8::5]:4711', trusted), '2001:db8::5');
    assert.equal(forwardedClientAddress('10.0.0.2', '198.51.100.1:4711', trusted), '198.51.100.1');
  });

  it('a trusted proxy with no header, or only trusted hops: the nearest address there is', () => {
    assert.equal(forwardedClientAddress('10.0.0.2', null, trusted), '10.0.0.2');
    assert.equal(forwardedClientAddress('10.0.0.2', '10.0.0.9, 10.0.0.3', trusted), '10.0.0.9');
  });

  it('a hop that is not an address ends the walk at the proxy that passed it on', () => {
    assert.equal(forwardedClientAddress('10.0.0.2', 'unknown', trusted), '10.0.0.2');
    assert.equal(forwardedClientAddress('10.0.0.2', 'garbage, 10.0.0.3', trusted), '10.0.0.3');
  });

  it('no peer, no address', () => {
    assert.equal(forwardedClientAddress(undefined, '198.51.100.1', trusted), undefined);
  });
});
