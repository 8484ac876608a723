/**
 * The code in the README and docs/*.md that comes from examples/ is the examples' code, so it
 * cannot drift: a block preceded by `<!-- from examples/FILE.ts#REGION -->` must equal the lines
 * between `// #region REGION` and `// #endregion REGION` of that file (indentation removed), and
 * every region of every example must be shown somewhere in them. The examples themselves are
 * typechecked and run end to end (test/e2e/examples.test.ts).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = resolve(import.meta.dirname, '../..');
/** The README and every page under docs/, by their path in the repository. */
const DOCUMENTS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** Every block of a document marked as coming from an example: where from, and its text. */
function markedBlocks(doc: string): { doc: string; file: string; region: string; text: string }[] {
  const text = readFileSync(join(ROOT, doc), 'utf8');
  const pattern = /<!-- from (examples\/[\w./-]+)#([\w-]+) -->\n```\w*\n([\s\S]*?)\n```/g;
  return [...text.matchAll(pattern)].map((m) => ({ doc, file: m[1]!, region: m[2]!, text: m[3]! }));
}

/** The regions of a source file by name, dedented. */
function regions(source: string): Map<string, string> {
  const found = new Map<string, string>();
  const pattern = /^[ \t]*\/\/ #region ([\w-]+)\n([\s\S]*?)^[ \t]*\/\/ #endregion \1$/gm;
  for (const m of source.matchAll(pattern)) found.set(m[1]!, dedent(m[2]!.replace(/\n$/, '')));
  return found;
}

function dedent(text: string): string {
  const lines = text.split('\n');
  const indent = Math.min(...lines.filter((line) => line.trim()).map((line) => /^ */.exec(line)![0].length));
  return lines.map((line) => line.slice(indent)).join('\n');
}

const exampleFiles = readdirSync(join(ROOT, 'examples'))
  .filter((name) => name.endsWith('.ts'))
  .map((name) => `examples/${name}`);

describe('the example code in the README and docs/', () => {
  const blocks = DOCUMENTS.flatMap(markedBlocks);

  it('finds the marked blocks (the marker format is the one this test reads)', () => {
    assert.ok(blocks.length >= 5, `${blocks.length} marked blocks`);
    assert.ok(
      blocks.some((b) => b.doc === 'README.md'),
      'the README shows example code',
    );
  });

  for (const block of blocks) {
    it(`${block.file}#${block.region} is the same in ${block.doc}`, () => {
      const source = regions(readFileSync(join(ROOT, block.file), 'utf8'));
      assert.ok(source.has(block.region), `no "// #region ${block.region}" in ${block.file}`);
      assert.equal(block.text, source.get(block.region), `${block.doc} block differs from ${block.file}#${block.region}; copy the region into ${block.doc}`);
    });
  }

  for (const file of exampleFiles) {
    it(`every region of ${file} is shown in the README or docs/`, () => {
      const names = [...regions(readFileSync(join(ROOT, file), 'utf8')).keys()];
      for (const name of names)
        assert.ok(
          blocks.some((b) => b.file === file && b.region === name),
          `${file}#${name} is in neither the README nor docs/`,
        );
    });
  }
});
