/**
 * A file a comment in src/ names exists: comments point readers at the code that explains them
 * (`sql/group-commit.ts`, `docs/performance.md`), and a pointer to a file that was renamed or
 * removed sends them nowhere. A path is looked for from the commenting file's folder and from
 * every folder above it, up to the repository's root, as a reader would.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = resolve(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');

function sourceFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** The comments of a TypeScript source, block and line. */
const comments = (text: string): string[] => [...text.matchAll(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g)].map((m) => m[0]);

/**
 * Paths that look like a file of ours: words and slashes ending in .ts, .js or .md, not part of a
 * URL or a package name (nothing before them but a space or punctuation).
 */
const namedPaths = (comment: string): string[] =>
  [...comment.matchAll(/(?<![\w@/.:-])((?:\.{1,2}\/)?[\w-]+(?:\/[\w.-]+)*\.(?:ts|js|md))\b/g)].map((m) => m[1]!);

function exists(from: string, path: string): boolean {
  for (let folder = dirname(from); ; folder = dirname(folder)) {
    if (existsSync(join(folder, path)) || existsSync(join(folder, path.replace(/\.js$/, '.ts')))) return true;
    if (folder === ROOT) return false;
  }
}

describe('files named in the comments of src/', () => {
  const files = sourceFiles(SRC);

  it('finds the comments and the paths in them (the patterns this test reads)', () => {
    const found = files.flatMap((file) => comments(readFileSync(file, 'utf8')).flatMap(namedPaths));
    assert.ok(found.length >= 50, `${found.length} paths`);
    assert.deepEqual(namedPaths('see sql/group-commit.ts, docs/api.md and https://example.com/x.js or @scope/pkg/y.ts'), [
      'sql/group-commit.ts',
      'docs/api.md',
    ]);
  });

  it("exist, from the commenting file's folder or one above it", () => {
    const missing = files.flatMap((file) =>
      comments(readFileSync(file, 'utf8'))
        .flatMap(namedPaths)
        .filter((path) => !exists(file, path))
        .map((path) => `${relative(ROOT, file)}: ${path}`),
    );
    assert.deepEqual(missing, []);
  });
});
