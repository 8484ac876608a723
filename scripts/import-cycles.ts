/**
 * Finds import cycles among the TypeScript files of a folder: every relative import counts —
 * `import type`, `export … from`, `import('…')` in a type or a call — since a cycle of types
 * alone still ties its files together. The strongly connected components of the import graph
 * (Tarjan) are the cycles; a file importing itself is one too.
 *
 *   node --import tsx scripts/import-cycles.ts [folder]   (default: src; exit 1 on a cycle)
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** Every module specifier a file names, whether its import is erased at compile time or not. */
export function importedSpecifiers(fileName: string, source: string): string[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push(node.moduleSpecifier.text);
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      found.push(node.moduleReference.expression.text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push(node.argument.literal.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [first] = node.arguments;
      if (first && ts.isStringLiteral(first)) found.push(first.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/** The file a relative specifier names (`./x.js` is `./x.ts` in the sources), or null when it is a package or not among `files`. */
function resolve(from: string, specifier: string, files: ReadonlySet<string>): string | null {
  if (!specifier.startsWith('.')) return null;
  const base = path.resolve(path.dirname(from), specifier);
  const candidates = [base.replace(/\.(m|c)?js$/, '.$1ts'), base, `${base}.ts`, path.join(base, 'index.ts')];
  return candidates.find((candidate) => files.has(candidate)) ?? null;
}

/** The `.ts` files under `folder` (declaration files aside), absolute paths, sorted. */
export function sourceFiles(folder: string): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(full);
    }
  };
  walk(path.resolve(folder));
  return out.sort();
}

/** Each file and the files among `files` it imports. */
export function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets = importedSpecifiers(file, readFileSync(file, 'utf8'))
      .map((specifier) => resolve(file, specifier, known))
      .filter((target): target is string => target !== null);
    graph.set(file, [...new Set(targets)].sort());
  }
  return graph;
}

/**
 * The cycles of `graph`: its strongly connected components of more than one file, and files that
 * import themselves. Tarjan's algorithm, iterative, so a deep chain of imports cannot overflow the stack.
 */
export function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const lowLink = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  let next = 0;
  for (const root of graph.keys()) {
    if (index.has(root)) continue;
    const work: Array<{ node: string; edge: number }> = [{ node: root, edge: 0 }];
    index.set(root, next);
    lowLink.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const edges = graph.get(frame.node) ?? [];
      if (frame.edge < edges.length) {
        const target = edges[frame.edge++]!;
        if (!index.has(target)) {
          index.set(target, next);
          lowLink.set(target, next++);
          stack.push(target);
          onStack.add(target);
          work.push({ node: target, edge: 0 });
        } else if (onStack.has(target)) {
          lowLink.set(frame.node, Math.min(lowLink.get(frame.node)!, index.get(target)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) lowLink.set(parent.node, Math.min(lowLink.get(parent.node)!, lowLink.get(frame.node)!));
      if (lowLink.get(frame.node) !== index.get(frame.node)) continue;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== frame.node);
      if (component.length > 1 || (graph.get(frame.node) ?? []).includes(frame.node)) cycles.push(component.sort());
    }
  }
  return cycles;
}

/** The cycles among the files under `folder`, each file relative to `relativeTo`. */
export function folderCycles(folder: string, relativeTo = process.cwd()): string[][] {
  return importCycles(importGraph(sourceFiles(folder))).map((cycle) => cycle.map((file) => path.relative(relativeTo, file)));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const folder = process.argv[2] ?? 'src';
  if (!existsSync(folder)) {
    process.stderr.write(`import-cycles: no folder ${folder}\n`);
    process.exit(2);
  }
  const cycles = folderCycles(folder);
  for (const [n, cycle] of cycles.entries()) process.stdout.write(`cycle ${n + 1} (${cycle.length} files):\n${cycle.map((file) => `  ${file}\n`).join('')}`);
  process.stdout.write(`${cycles.length} import cycle${cycles.length === 1 ? '' : 's'} in ${folder}\n`);
  process.exit(cycles.length === 0 ? 0 : 1);
}
