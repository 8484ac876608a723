/**
 * The capability checks: a capability is there when all of its methods are, absent when none is,
 * and a store with only some of them is refused by name rather than treated as lacking it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  capabilitiesOf,
  hasAdministration,
  hasAuditEvents,
  hasConsole,
  hasDeviceAuthorization,
  hasRateBuckets,
  hasRefreshRetry,
  hasRefreshWithAssertion,
  hasRevocationFeed,
  hasSignOut,
  hasUpkeep,
  isFullStore,
} from '../../src/store/capabilities.js';
import { createMemoryStore } from '../../src/store/memory.js';
import type { Store } from '../../src/store/store.js';
import { withoutCapabilities } from '../helpers/core-store.js';

describe('store capabilities', () => {
  it('the memory store has every capability', () => {
    const store = createMemoryStore();
    assert.deepEqual(capabilitiesOf(store), [
      'deviceAuthorization',
      'signOut',
      'refreshRetry',
      'refreshWithAssertion',
      'upkeep',
      'rateBuckets',
      'revocationFeed',
      'administration',
      'console',
      'auditEvents',
    ]);
    assert.ok(isFullStore(store));
  });

  it('a store with the core contract alone has none', () => {
    const store = withoutCapabilities(createMemoryStore());
    assert.deepEqual(capabilitiesOf(store), []);
    assert.equal(isFullStore(store), false);
    for (const has of [
      hasDeviceAuthorization,
      hasSignOut,
      hasRefreshRetry,
      hasRefreshWithAssertion,
      hasUpkeep,
      hasRateBuckets,
      hasRevocationFeed,
      hasAdministration,
      hasConsole,
      hasAuditEvents,
    ]) {
      assert.equal(has(store), false);
    }
  });

  it('each capability is told apart', () => {
    const store = withoutCapabilities(createMemoryStore(), ['signOut', 'upkeep', 'administration', 'auditEvents']);
    assert.deepEqual(capabilitiesOf(store), ['deviceAuthorization', 'refreshRetry', 'refreshWithAssertion', 'rateBuckets', 'revocationFeed', 'console']);
  });

  it('half a capability is an error that names what is missing', () => {
    const store = { ...withoutCapabilities(createMemoryStore(), ['upkeep']), touchClient: async () => undefined } as Store;
    assert.throws(
      () => hasUpkeep(store),
      (error: unknown) => error instanceof TypeError && /has touchClient but not sweepExpired/.test(error.message),
    );
    assert.throws(() => capabilitiesOf(store), TypeError);
  });
});
