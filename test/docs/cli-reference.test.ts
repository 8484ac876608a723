/**
 * docs/cli.md cannot drift from the CLI: `context-auth --help` (the overview) and each verb's
 * `--help` text appear there verbatim (a block preceded by `<!-- context-auth ARGS -->`), every
 * option a verb's parser accepts is in its help text, and every `--flag` its help text names is one
 * the parser accepts (a flag named after another verb, `clients add --jwks`, must be that verb's).
 * The options every verb shares (--json, --help, and --data/--store for the server-side verbs)
 * are described once, at the end of `context-auth --help`, which names the verbs that take
 * --data. The verbs are the CLI's own table (commands.ts): a new one is checked without being
 * listed here.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { COMMON_HELP, HELP, VERBS as TABLE } from '../../src/cli/commands.js';

const ROOT = resolve(import.meta.dirname, '../..');
const CLI_DOC = readFileSync(join(ROOT, 'docs/cli.md'), 'utf8');

const VERBS = Object.entries(TABLE).map(([verb, { help, options }]) => ({ verb, help, options }));

/** The text of the block marked `<!-- context-auth ARGS -->` in docs/cli.md, if there is one (and only one). */
function documentedBlock(args: string): string | undefined {
  const marker = `<!-- context-auth ${args} -->`;
  const blocks = [...CLI_DOC.matchAll(/<!-- (context-auth [^>]*?) -->\n```\w*\n([\s\S]*?)\n```/g)].filter((m) => `<!-- ${m[1]} -->` === marker);
  assert.ok(blocks.length <= 1, `${marker} appears ${blocks.length} times in docs/cli.md`);
  return blocks[0]?.[2];
}

/** The --flags a text names, without values: `--rate-limit NAME=RATE` gives rate-limit. */
const flagsIn = (text: string): Set<string> => new Set([...text.matchAll(/(?<![\w-])--([a-z][a-z0-9-]*)/g)].map((m) => m[1]!));

/**
 * A verb's help split into the flags it names as its own and those it names as another verb's,
 * right after that verb (and its action): `clients add --jwks FILE`, `serve --workload-config FILE
 * --allow-insecure-idp`.
 */
function namedFlags(help: string, self: string): { own: Set<string>; others: Map<string, Set<string>> } {
  const verbs = VERBS.map((v) => v.verb).filter((verb) => verb !== self);
  const pattern = new RegExp(`(?<![\\w-])(${verbs.join('|')})(?: [a-z]+)?((?: (?:--[a-z][a-z0-9-]*|[A-Z][A-Z_]*))+)`, 'g');
  const others = new Map<string, Set<string>>();
  for (const m of help.matchAll(pattern)) others.set(m[1]!, new Set([...(others.get(m[1]!) ?? []), ...flagsIn(m[2]!)]));
  return { own: flagsIn(help.replace(pattern, '')), others };
}

describe('docs/cli.md shows what the CLI prints', () => {
  for (const { verb, help } of VERBS) {
    it(`context-auth ${verb} --help`, () => {
      const block = documentedBlock(`${verb} --help`);
      assert.ok(block !== undefined, `docs/cli.md has no block marked <!-- context-auth ${verb} --help -->`);
      assert.equal(block, help, `docs/cli.md differs from \`context-auth ${verb} --help\`; copy the help text into docs/cli.md`);
    });
  }

  it('context-auth --help, which ends with the options every verb shares', () => {
    assert.equal(documentedBlock('--help'), HELP, 'docs/cli.md differs from `context-auth --help`; copy the help text into docs/cli.md');
    assert.ok(HELP.endsWith(`\n${COMMON_HELP}`));
  });
});

describe("each verb's help names exactly the options its parser accepts", () => {
  /** The sentence of the shared options that names who takes --data and --store. */
  const storeSentence = COMMON_HELP.split('\n')
    .slice(COMMON_HELP.split('\n').findIndex((line) => line.includes('--data')))
    .join(' ');

  for (const { verb, help, options } of VERBS) {
    it(verb, () => {
      const accepted = new Set(Object.keys(options));
      const named = flagsIn(help);
      const { own, others } = namedFlags(help, verb);
      for (const [other, flags] of others) {
        const theirs = new Set(Object.keys(TABLE[other]!.options));
        for (const flag of flags) assert.ok(theirs.has(flag), `${verb}'s help names ${other} --${flag}, which ${other} refuses`);
      }
      for (const option of accepted) {
        if (option === 'json' || option === 'help') {
          assert.match(COMMON_HELP, new RegExp(`--${option}\\b`), `the shared options do not describe --${option}`);
          continue;
        }
        if ((option === 'data' || option === 'store') && !named.has(option)) {
          assert.match(storeSentence, new RegExp(`\\b${verb}\\b`), `${verb} takes --${option}, but neither its help nor the shared options say so`);
          continue;
        }
        assert.ok(named.has(option), `${verb} accepts --${option}, which its help does not name`);
      }
      for (const flag of own) assert.ok(accepted.has(flag), `${verb}'s help names --${flag}, which its parser refuses`);
      // The shared options name a verb for --data exactly when it takes --data (and --store).
      assert.equal(new RegExp(`\\b${verb}\\b`).test(storeSentence), accepted.has('data'), `the shared options are wrong about ${verb} and --data`);
      assert.equal(accepted.has('data'), accepted.has('store'), `${verb} takes one of --data and --store but not the other`);
    });
  }
});
