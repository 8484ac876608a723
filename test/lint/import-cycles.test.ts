/**
 * No import cycle in src/, type-only imports included; and the check itself shown finding the
 * cycles of small fixtures written for each way a file can name another, and failing the command.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { folderCycles, importCycles } from '../../scripts/import-cycles.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const fixtures = mkdtempSync(path.join(tmpdir(), 'import-cycles-'));
after(() => rmSync(fixtures, { recursive: true, force: true }));

/** A folder of fixture files, each `name: source`. */
function fixture(name: string, files: Record<string, string>): string {
  const folder = path.join(fixtures, name);
  for (const [file, source] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(folder, file)), { recursive: true });
    writeFileSync(path.join(folder, file), source);
  }
  return folder;
}

describe('import cycles', () => {
  it('src/ has none, type-only imports included', () => {
    assert.deepEqual(folderCycles(path.join(root, 'src'), root), []);
  });

  it('finds a cycle made of type-only imports, naming its files', () => {
    const folder = fixture('type-only', {
      'context.ts': "import type { Clients } from './clients.js';\nexport interface Context { clients: Clients }\n",
      'clients.ts': "import type { Context } from './context.js';\nexport class Clients { constructor(readonly context: Context) {} }\n",
      'leaf.ts': "import type { Context } from './context.js';\nexport type Leaf = Context;\n",
    });
    assert.deepEqual(folderCycles(folder, folder), [['clients.ts', 'context.ts']]);
  });

  it('finds cycles through `export … from`, `import()` types and calls, subfolders and index files', () => {
    const folder = fixture('other-forms', {
      'a.ts': "export * from './b.js';\n",
      'b.ts': "export type C = import('./c.js').C;\n",
      'c.ts': "export type C = number;\nexport const load = () => import('./a.js');\n",
      'd.ts': "export { e } from './sub/index.js';\n",
      'sub/index.ts': "import { d } from '../d.js';\nexport const e = d;\n",
      'self.ts': "export type Self = import('./self.js').Self[];\n",
    });
    assert.deepEqual(folderCycles(folder, folder), [['a.ts', 'b.ts', 'c.ts'], ['d.ts', 'sub/index.ts'], ['self.ts']]);
  });

  it('finds none where imports only go one way, packages aside', () => {
    const folder = fixture('acyclic', {
      'a.ts': "import type { B } from './b.js';\nimport { readFileSync } from 'node:fs';\nexport type A = B;\nexport const r = readFileSync;\n",
      'b.ts': "import type { C } from './c.js';\nexport type B = C;\n",
      'c.ts': "import ts from 'typescript';\nexport type C = typeof ts;\n",
    });
    assert.deepEqual(folderCycles(folder, folder), []);
  });

  it('walks a chain deeper than a recursive search could', () => {
    const graph = new Map<string, string[]>();
    const length = 100_000;
    for (let i = 0; i < length; i++) graph.set(`f${i}`, [`f${(i + 1) % length}`]);
    const cycles = importCycles(graph);
    assert.equal(cycles.length, 1);
    assert.equal(cycles[0]!.length, length);
  });

  it('the command prints each cycle and exits 1 on one, 0 on none', () => {
    const run = (folder: string) =>
      spawnSync(process.execPath, ['--import', import.meta.resolve('tsx'), path.join(root, 'scripts/import-cycles.ts'), folder], {
        cwd: fixtures,
        encoding: 'utf8',
      });
    const failing = run('type-only');
    assert.equal(failing.status, 1, failing.stderr);
    assert.match(failing.stdout, /cycle 1 \(2 files\):\n {2}type-only\/clients\.ts\n {2}type-only\/context\.ts\n1 import cycle in type-only\n/);
    const passing = run('acyclic');
    assert.equal(passing.status, 0, passing.stderr);
    assert.equal(passing.stdout, '0 import cycles in acyclic\n');
  });
});
