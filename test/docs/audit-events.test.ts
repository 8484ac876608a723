/** docs/audit.md cannot drift from the list: its table names every event the code may log, and no other, with its outcome. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { AUDIT_EVENTS } from '../../src/authorization-server/audit.js';

const DOC = readFileSync(join(resolve(import.meta.dirname, '../..'), 'docs/audit.md'), 'utf8');

describe('docs/audit.md', () => {
  it('lists every audit event, and only those, with its outcome', () => {
    const rows = [...DOC.matchAll(/^\| `([a-z_]+)` \| (success|failure) \|/gm)].map((match) => [match[1], match[2]]);
    assert.deepEqual(
      rows,
      Object.entries(AUDIT_EVENTS).map(([name, event]) => [name, event.outcome]),
    );
  });
});
