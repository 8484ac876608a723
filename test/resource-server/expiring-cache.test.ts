/**
 * The verifiers' bounded cache: entries expire each at its own time, and it can tell when none
 * is live any more (the JWT verifier then skips hashing a new token to look up refusals).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ExpiringCache } from '../../src/resource-server/types.js';

describe('ExpiringCache', () => {
  it('holds an entry until its own time, and holds none once the latest has passed', () => {
    const cache = new ExpiringCache<string>(10);
    assert.equal(cache.holdsAnyAt(0), false, 'empty');
    cache.set('a', 'first', 100);
    cache.set('b', 'second', 160);
    assert.equal(cache.holdsAnyAt(120), true, 'b is live');
    assert.equal(cache.get('a', 120), undefined, 'a has expired');
    assert.equal(cache.get('b', 120), 'second');
    assert.equal(cache.holdsAnyAt(160), false, 'both have expired');
    assert.equal(cache.get('b', 100), undefined, 'and were dropped, whatever the clock says later');
    cache.set('c', 'third', 200);
    assert.equal(cache.holdsAnyAt(170), true, 'a new entry after a drop counts again');
  });
});
