import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { loadOptionalPackage, PG, PROM_CLIENT } from '../../src/core/optional-package.js';

/** A folder with no node_modules of its own: Node's resolution from there finds neither package. */
const elsewhere = mkdtempSync(join(tmpdir(), 'context-auth-optional-'));
after(() => rmSync(elsewhere, { recursive: true, force: true }));
const requireFrom = (folder: string) => createRequire(join(folder, 'index.js'));

describe('optional peer dependencies', () => {
  it('loads the package when it is installed', () => {
    assert.equal(typeof loadOptionalPackage<{ Pool: unknown }>(PG).Pool, 'function');
    assert.equal(typeof loadOptionalPackage<{ Registry: unknown }>(PROM_CLIENT).Registry, 'function');
  });

  it('names the package to install, and the feature that needs it, when it is missing', () => {
    assert.throws(() => loadOptionalPackage(PG, requireFrom(elsewhere)), {
      message: 'The PostgreSQL store (context-auth/store/postgres, --store postgres://…) needs the package pg, which is not installed: run npm install pg',
    });
    assert.throws(() => loadOptionalPackage(PROM_CLIENT, requireFrom(elsewhere)), {
      message: 'The metrics option (serve --metrics) needs the package prom-client, which is not installed: run npm install prom-client',
    });
  });

  it('passes on the error of a package that is installed but fails to load', () => {
    const folder = join(elsewhere, 'broken');
    mkdirSync(join(folder, 'node_modules', 'pg'), { recursive: true });
    writeFileSync(join(folder, 'node_modules', 'pg', 'index.js'), "require('a-dependency-pg-lacks');\n");
    assert.throws(
      () => loadOptionalPackage(PG, requireFrom(folder)),
      (error: Error) => /a-dependency-pg-lacks/.test(error.message) && !/npm install/.test(error.message),
    );
  });
});
