/**
 * docs/store.md cannot drift from the contract: its tables name every method of each aggregate of
 * the core and of each capability, and no other; the method count it and docs/architecture.md give
 * is the core's; the capability checks and the probes' record kinds it names are the code's. The
 * core stays at 30 methods at most: what only an optional feature needs is a capability.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { CAPABILITY_METHODS, CORE_METHODS, type StoreAggregate } from '../../src/store/capabilities.js';
import * as storeEntry from '../../src/store/index.js';
import { RECORD_KINDS } from '../../src/store/testing/probes.js';

const root = resolve(import.meta.dirname, '../..');
const STORE_DOC = readFileSync(join(root, 'docs/store.md'), 'utf8');
const ARCHITECTURE = readFileSync(join(root, 'docs/architecture.md'), 'utf8');

/** The names in backquotes of a table cell. */
const names = (cell: string): string[] => [...cell.matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1]!);

/** The rows of the table whose header row starts with `header`, as cells. */
function table(header: string): string[][] {
  const lines = STORE_DOC.split('\n');
  const start = lines.findIndex((line) => line.startsWith(header));
  assert.ok(start >= 0, `docs/store.md has a table starting ${header}`);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
  }
  return rows;
}

const AGGREGATE_NAMES: Record<string, StoreAggregate> = {
  clients: 'clients',
  people: 'people',
  interactions: 'interactions',
  sessions: 'sessions',
  grants: 'grants',
  'replay records': 'replay',
  keys: 'keys',
};
const coreCount = 1 + Object.values(CORE_METHODS).flat().length;

describe('docs/store.md', () => {
  it('lists each aggregate of the core with its methods, and the count of them with close', () => {
    const rows = table('| aggregate | interface | methods |');
    assert.deepEqual(Object.fromEntries(rows.map(([aggregate, , methods]) => [AGGREGATE_NAMES[aggregate!] ?? aggregate, names(methods!)])), CORE_METHODS);
    assert.match(STORE_DOC, new RegExp(`\`Store\` is what every flow needs, ${coreCount} methods: \`close\\(\\)\` and the methods of seven aggregates`));
    assert.match(ARCHITECTURE, new RegExp(`is what every flow needs, ${coreCount} methods`));
  });

  it('lists each capability with its methods', () => {
    const rows = table('| capability | interface | methods | without it |');
    const listed = Object.fromEntries(rows.map(([capability, , methods]) => [names(capability!)[0], names(methods!).filter((m) => m !== 'watchRevocations')]));
    assert.deepEqual(listed, CAPABILITY_METHODS);
  });

  it('names every capability check that context-auth/store exports', () => {
    const checks = Object.keys(storeEntry)
      .filter((name) => /^has[A-Z]/.test(name))
      .sort();
    const named = [...STORE_DOC.matchAll(/`(has[A-Z]\w+)`/g)].map((m) => m[1]!);
    assert.deepEqual([...new Set(named)].sort(), checks);
  });

  it('names the record kinds the probes count', () => {
    const paragraph = /The kinds \(`RecordKind`\) are ([^.]+)\./.exec(STORE_DOC.replace(/\n/g, ' '));
    assert.ok(paragraph);
    assert.deepEqual(names(paragraph[1]!), RECORD_KINDS);
  });
});

describe('the core contract', () => {
  it('stays at 30 methods at most: a method only an optional feature needs belongs to a capability', () => {
    assert.ok(coreCount <= 30, `Store has ${coreCount} methods`);
  });
});
