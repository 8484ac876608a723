import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isNonPublicAddress } from '../../src/core/addresses.js';

describe('addresses a fetch on a stranger\'s word may reach', () => {
  it('public unicast only', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '2606:4700::1111', '::ffff:8.8.8.8']) assert.equal(isNonPublicAddress(address), false, address);
  });
  it('never loopback, private, link-local (cloud metadata), CGNAT, reserved or multicast, nor IPv6 forms of them', () => {
    for (const address of [
      '127.0.0.1', '127.1.2.3', '10.1.2.3', '172.16.5.4', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0',
      '198.18.0.1', '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', 'fc00::1', 'fd12:3456::1', 'ff02::1',
      '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:a9fe:a9fe', '64:ff9b::a00:1', 'not an address',
    ]) assert.equal(isNonPublicAddress(address), true, address);
  });
});
