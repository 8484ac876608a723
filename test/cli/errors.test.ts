/**
 * What the CLI suggests for a mistyped option or verb: the names it begins, else the nearest
 * within one edit (two for a longer word), a swap of neighbours counting as one; nothing when no
 * name is near.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadOptionalPackage, PROM_CLIENT } from '../../src/core/optional-package.js';
import { describeFailure, didYouMean, nearest, usageError } from '../../src/cli/errors.js';

const SERVE = ['port', 'host', 'issuer', 'registration', 'registration-ttl', 'resource', 'quiet', 'data', 'store'];

describe('nearest: what a mistyped name probably meant', () => {
  it('finds a swap of neighbours, a missing, an extra and a wrong letter', () => {
    assert.deepEqual(nearest('prot', SERVE), ['port']);
    assert.deepEqual(nearest('isuer', SERVE), ['issuer']);
    assert.deepEqual(nearest('hosts', SERVE), ['host']);
    assert.deepEqual(nearest('quite', SERVE), ['quiet']);
    assert.deepEqual(nearest('serv', ['serve', 'users', 'clients']), ['serve']);
  });

  it('names every option a word cut short begins, at most three', () => {
    assert.deepEqual(nearest('regis', SERVE), ['registration', 'registration-ttl']);
    assert.deepEqual(nearest('client', ['client-id', 'client-secret', 'credentials']), ['client-id', 'client-secret']);
  });

  it('suggests nothing for a word far from every name, or a single letter', () => {
    assert.deepEqual(nearest('frobnicate', SERVE), []);
    assert.deepEqual(nearest('x', SERVE), []);
    assert.deepEqual(nearest('dat', ['data', 'date']), ['data', 'date']);
  });

  it('is one clause for the message, or nothing', () => {
    assert.equal(didYouMean('prot', SERVE, '--'), '; did you mean --port?');
    assert.equal(didYouMean('regis', SERVE, '--'), '; did you mean --registration or --registration-ttl?');
    assert.equal(didYouMean('c', ['clients', 'call']), '');
  });
});

describe('a usage error says where the help is', () => {
  it("the verb's own help when the mistake was made in one, else the overview", () => {
    assert.equal(describeFailure(usageError('unknown option --prot'), 'serve').message, "unknown option --prot (see 'context-auth serve --help')");
    assert.equal(describeFailure(usageError('unknown command serv')).message, "unknown command serv (see 'context-auth --help')");
    assert.equal(describeFailure(usageError('x'), 'serve').exitCode, 2);
  });
});

describe('an optional feature used without its package', () => {
  it('is reported as such, naming the package, not as an unexpected error', () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'context-auth-cli-'));
    try {
      let thrown: unknown;
      try {
        loadOptionalPackage(PROM_CLIENT, createRequire(join(elsewhere, 'index.js')));
      } catch (error) {
        thrown = error;
      }
      // As serve meets it: wrapped by whatever started the feature.
      const failure = describeFailure(new Error('start failed', { cause: thrown }), 'serve');
      assert.deepEqual(failure, {
        error: 'missing_package',
        message: 'The metrics option (serve --metrics) needs the package prom-client, which is not installed: run npm install prom-client',
        exitCode: 1,
        unexpected: false,
      });
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});
