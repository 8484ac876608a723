import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SessionOwners } from '../../src/gateway/session-owners.js';

describe('SessionOwners: a session is used only by whoever opened it', () => {
  it('allows the owner, refuses anyone else and any session it never saw', () => {
    const owners = new SessionOwners(10, 60_000, () => 0);
    owners.opened('s1', 'alice');
    assert.equal(owners.allows('s1', 'alice'), true);
    assert.equal(owners.allows('s1', 'bob'), false);
    assert.equal(owners.allows('s2', 'alice'), false);
  });

  it('does not hand a session over to another owner who reports the same id', () => {
    const owners = new SessionOwners(10, 60_000, () => 0);
    owners.opened('s1', 'alice');
    owners.opened('s1', 'bob');
    assert.equal(owners.allows('s1', 'bob'), false);
    assert.equal(owners.allows('s1', 'alice'), true);
  });

  it('forgets a session when it is closed, idle too long, or the least recently used past the bound', () => {
    let now = 0;
    const owners = new SessionOwners(2, 1000, () => now);
    owners.opened('s1', 'alice');
    owners.closed('s1');
    assert.equal(owners.allows('s1', 'alice'), false);

    owners.opened('idle', 'alice');
    now = 1001;
    assert.equal(owners.allows('idle', 'alice'), false, 'idle longer than the limit');

    owners.opened('a', 'alice');
    owners.opened('b', 'alice');
    assert.equal(owners.allows('a', 'alice'), true, 'a is now the most recently used');
    owners.opened('c', 'alice');
    assert.equal(owners.size, 2);
    assert.equal(owners.allows('b', 'alice'), false, 'b, least recently used, made room');
    assert.equal(owners.allows('a', 'alice'), true);
    assert.equal(owners.allows('c', 'alice'), true);
  });
});
