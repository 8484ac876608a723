/**
 * Each SQL store has its own entry point, and importing one never loads the other's native driver
 * (nor does `context-auth/store`, which has the contract and the memory store, nor the suite for
 * stores of other databases, `context-auth/store/testing`). `context-auth/store` exports what a
 * user of a store needs and nothing of how ours are built.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

const root = path.resolve(import.meta.dirname, '../..');

/** The CommonJS modules (both drivers are) that importing `entry` loads, in a fresh process. */
function modulesLoadedBy(entry: string): string[] {
  const script = `await import(${JSON.stringify(path.join(root, entry))});
    const { createRequire } = await import('node:module');
    console.log(JSON.stringify(Object.keys(createRequire(import.meta.url).cache)));`;
  const output = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' });
  return JSON.parse(output) as string[];
}

const loads = (modules: string[], pkg: string): boolean => modules.some((m) => m.includes(`${path.sep}node_modules${path.sep}${pkg}${path.sep}`));

describe('store entry points', () => {
  const exports = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { exports: Record<string, { types: string; default: string }> })
    .exports;

  it('package.json exports context-auth/store/sqlite, context-auth/store/postgres and context-auth/store/testing', () => {
    assert.equal(exports['./store/sqlite']?.default, './dist/store/sqlite.js');
    assert.equal(exports['./store/postgres']?.default, './dist/store/postgres.js');
    assert.deepEqual(exports['./store/testing'], { types: './dist/store/testing/index.d.ts', default: './dist/store/testing/index.js' });
  });

  it('the SQLite store loads better-sqlite3 and not pg', () => {
    const modules = modulesLoadedBy('src/store/sqlite.ts');
    assert.ok(loads(modules, 'better-sqlite3'));
    assert.ok(!loads(modules, 'pg'));
  });

  it('the PostgreSQL store loads neither driver on import: pg, an optional peer, when a store is opened', () => {
    const modules = modulesLoadedBy('src/store/postgres.ts');
    assert.ok(!loads(modules, 'pg'));
    assert.ok(!loads(modules, 'better-sqlite3'));
  });

  it('context-auth/store and context-auth/store/testing load neither driver', () => {
    for (const entry of ['src/store/index.ts', 'src/store/testing/index.ts']) {
      const modules = modulesLoadedBy(entry);
      assert.ok(!loads(modules, 'pg') && !loads(modules, 'better-sqlite3'), entry);
    }
  });

  it("context-auth/store exports the errors, the capability checks and the memory store, and none of the stores' internals", async () => {
    const store = await import('../../src/store/index.js');
    assert.deepEqual(Object.keys(store).sort(), [
      'StoreError',
      'capabilitiesOf',
      'createMemoryStore',
      'hasAdministration',
      'hasAuditEvents',
      'hasConsole',
      'hasDeviceAuthorization',
      'hasRateBuckets',
      'hasRefreshRetry',
      'hasRefreshWithAssertion',
      'hasRevocationFeed',
      'hasSignOut',
      'hasUpkeep',
      'isFullStore',
      'isStoreConflict',
      'isStoreUnavailable',
    ]);
    const testing = await import('../../src/store/testing/index.js');
    assert.deepEqual(Object.keys(testing), ['runStoreSuite']);
  });
});
