/**
 * docs/api.md lists every name each entry point of package.json's "exports" exports, in that
 * entry point's section, and nothing else: a new export fails here until it is documented, and a
 * name removed from an entry point fails here until the page forgets it. The names are read with
 * the TypeScript compiler from the entry points' source, as a program importing them sees them.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';

const ROOT = resolve(import.meta.dirname, '../..');

/** Each entry point by its import name, with its source file (dist/x.js is built from src/x.ts). */
function entryPoints(): Map<string, string> {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, string | { default: string }> };
  const entries = new Map<string, string>();
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    if (typeof target === 'string') continue; // ./package.json
    entries.set(`context-auth${subpath.slice(1)}`, join(ROOT, target.default.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts')));
  }
  return entries;
}

/** The names each entry point exports, values and types alike. */
function exportedNames(entries: Map<string, string>): Map<string, string[]> {
  const program = ts.createProgram([...entries.values()], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  return new Map(
    [...entries].map(([name, file]) => {
      const source = program.getSourceFile(file);
      assert.ok(source, `${name}: ${file} is missing`);
      const module = checker.getSymbolAtLocation(source);
      assert.ok(module, `${name}: ${file} is not a module`);
      return [
        name,
        checker
          .getExportsOfModule(module)
          .map((symbol) => symbol.name)
          .sort(),
      ];
    }),
  );
}

/** The names docs/api.md lists under each `## \`context-auth/…\`` heading: the first cell of each table row. */
function documentedNames(): Map<string, string[]> {
  const page = readFileSync(join(ROOT, 'docs/api.md'), 'utf8');
  const sections = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of page.split('\n')) {
    const heading = /^## `(context-auth\/[\w/-]+)`$/.exec(line);
    if (heading) sections.set(heading[1]!, (current = []));
    else if (line.startsWith('## ')) current = undefined;
    const row = /^\| `(\w+)` \|/.exec(line);
    if (row && current) current.push(row[1]!);
  }
  return new Map([...sections].map(([name, names]) => [name, names.sort()]));
}

describe('docs/api.md, the reference of every entry point', () => {
  const entries = entryPoints();
  const exported = exportedNames(entries);
  const documented = documentedNames();

  it('has a section for each entry point, and none for another', () => {
    assert.ok(entries.size >= 9, `${entries.size} entry points`);
    assert.deepEqual([...documented.keys()].sort(), [...entries.keys()].sort());
  });

  for (const [entry, names] of exported) {
    it(`lists exactly what ${entry} exports`, () => {
      assert.ok(names.length > 0, `${entry} exports nothing`);
      const listed = new Set(documented.get(entry) ?? []);
      const missing = names.filter((name) => !listed.has(name));
      assert.deepEqual(missing, [], `exported by ${entry} but not in its section of docs/api.md: ${missing.join(', ')}`);
      const stale = [...listed].filter((name) => !names.includes(name));
      assert.deepEqual(stale, [], `in docs/api.md under ${entry} but not exported: ${stale.join(', ')}`);
      assert.equal(documented.get(entry)!.length, listed.size, `a name is listed twice under ${entry}`);
    });
  }
});
