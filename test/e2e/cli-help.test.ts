/**
 * The help a person meets at the terminal, from the built CLI: `context-auth --help` is a short
 * overview (each verb in one line, grouped) that says how to get a verb's own help; `VERB --help`
 * and `help VERB` print it; a mistyped verb, option or action is answered with what was probably
 * meant and where the help is, with exit code 2. Run `npx tsc -p tsconfig.build.json` first.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HELP, VERBS } from '../../src/cli/commands.js';
import { cli, tempDataFolder } from './serve-process.js';

/** The one error line of a usage mistake, with its exit code checked. */
async function usage(args: string[]): Promise<string> {
  const result = await cli(args);
  assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
  assert.equal(result.stdout, '');
  return result.stderr;
}

describe('context-auth --help', () => {
  it('is an overview that fits a terminal: every verb in one line, then how to get its own help', async () => {
    for (const args of [['--help'], ['-h'], ['help'], []]) {
      const result = await cli(args);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout, `${HELP}\n`);
    }
    const lines = HELP.split('\n');
    assert.ok(lines.length <= 40, `${lines.length} lines`);
    for (const verb of Object.keys(VERBS)) assert.equal(lines.filter((line) => new RegExp(`^  ${verb} +\\S`).test(line)).length, 1, `one line for ${verb}`);
    assert.match(HELP, /context-auth VERB --help/);
  });

  it("VERB --help and help VERB print the verb's own help", async () => {
    for (const [verb, { help }] of Object.entries(VERBS)) {
      for (const args of [
        [verb, '--help'],
        ['help', verb],
      ]) {
        const result = await cli(args);
        assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
        assert.equal(result.stdout, `${help}\n`, args.join(' '));
      }
    }
  });
});

describe('a mistyped command line', () => {
  it("an unknown option of any verb: the nearest of that verb's own options, and that verb's help", async () => {
    for (const verb of Object.keys(VERBS)) {
      assert.equal(await usage([verb, '--hepl']), `context-auth: unknown option --hepl; did you mean --help? (see 'context-auth ${verb} --help')\n`);
    }
    assert.equal(await usage(['serve', '--prot', '8080']), "context-auth: unknown option --prot; did you mean --port? (see 'context-auth serve --help')\n");
    assert.equal(
      await usage(['serve', '--isuer=http://127.0.0.1:8080']),
      "context-auth: unknown option --isuer; did you mean --issuer? (see 'context-auth serve --help')\n",
    );
    assert.equal(
      await usage(['users', 'add', 'alice', '--admn']),
      "context-auth: unknown option --admn; did you mean --admin? (see 'context-auth users --help')\n",
    );
    assert.equal(
      await usage(['clients', 'add', '--nmae', 'robot']),
      "context-auth: unknown option --nmae; did you mean --name? (see 'context-auth clients --help')\n",
    );
    assert.equal(
      await usage(['clients', 'add', '--jwk', 'keys.json']),
      "context-auth: unknown option --jwk; did you mean --jwks or --jwks-uri? (see 'context-auth clients --help')\n",
    );
    assert.equal(await usage(['serve', '--frobnicate']), "context-auth: unknown option --frobnicate (see 'context-auth serve --help')\n");
  });

  it('an unknown verb: the nearest verb, and the overview', async () => {
    assert.equal(await usage(['serv']), "context-auth: unknown command serv; did you mean serve? (see 'context-auth --help')\n");
    assert.equal(await usage(['help', 'cal']), "context-auth: unknown command cal; did you mean call? (see 'context-auth --help')\n");
    assert.equal(await usage(['frobnicate']), "context-auth: unknown command frobnicate (see 'context-auth --help')\n");
    // A name every object has is no verb either.
    assert.equal(await usage(['toString']), "context-auth: unknown command toString (see 'context-auth --help')\n");
    assert.equal(await usage(['help', 'constructor']), "context-auth: unknown command constructor (see 'context-auth --help')\n");
  });

  it('an unknown action of a server-side verb: the nearest action, told before any database is looked for', async () => {
    const nowhere = tempDataFolder();
    assert.equal(
      await usage(['keys', 'rotat', '--data', nowhere]),
      "context-auth: unknown keys action rotat; did you mean rotate? (see 'context-auth keys --help')\n",
    );
    assert.equal(
      await usage(['users', 'lst', '--data', nowhere]),
      "context-auth: unknown users action lst; did you mean list? (see 'context-auth users --help')\n",
    );
    assert.equal(
      await usage(['clients', 'remvoe', 'x', '--data', nowhere]),
      "context-auth: unknown clients action remvoe; did you mean remove? (see 'context-auth clients --help')\n",
    );
    assert.equal(
      await usage(['consents', 'revok', '--data', nowhere]),
      "context-auth: unknown consents action revok; did you mean revoke? (see 'context-auth consents --help')\n",
    );
    assert.equal(
      await usage(['consents', 'revoke', '--user', 'alice', '--data', nowhere]),
      "context-auth: consents revoke needs --user and --client (see 'context-auth consents --help')\n",
    );
  });
});
