/**
 * STDIO servers take credentials from their environment, not from OAuth (spec, "Scope", rule 3):
 * stdioCredentials reads them by name and says which are missing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { stdioCredentials } from '../../src/client/stdio.js';
import { clientError } from './setup.js';

describe('stdioCredentials', () => {
  it('returns the named variables when present', () => {
    const env = { GITHUB_TOKEN: 'ghp_secret', API_BASE: 'https://api.example', OTHER: 'x' };
    const credentials = stdioCredentials({ token: 'GITHUB_TOKEN', base: 'API_BASE' }, { env });
    assert.deepEqual(credentials, { token: 'ghp_secret', base: 'https://api.example' });
  });

  it('reads process.env by default', () => {
    process.env.CONTEXT_AUTH_STDIO_TEST = 'from-process';
    try {
      assert.deepEqual(stdioCredentials({ value: 'CONTEXT_AUTH_STDIO_TEST' }), { value: 'from-process' });
    } finally {
      delete process.env.CONTEXT_AUTH_STDIO_TEST;
    }
  });

  it('a missing variable: login_required naming it (and only the missing ones), never a value', () => {
    const env = { API_BASE: 'https://api.example', GITHUB_TOKEN: '' };
    assert.throws(
      () => stdioCredentials({ token: 'GITHUB_TOKEN', base: 'API_BASE', key: 'API_KEY' }, { env }),
      (error: unknown) => {
        clientError('login_required', /GITHUB_TOKEN, API_KEY/)(error);
        assert.doesNotMatch((error as Error).message, /API_BASE|api\.example/);
        assert.match((error as Error).message, /STDIO/);
        return true;
      },
    );
  });

  it('an empty value counts as missing', () => {
    assert.throws(() => stdioCredentials({ token: 'GITHUB_TOKEN' }, { env: { GITHUB_TOKEN: '' } }), clientError('login_required', /GITHUB_TOKEN/));
  });

  it('optional variables may be absent: left out of the result', () => {
    const env = { GITHUB_TOKEN: 'ghp_secret' };
    const credentials = stdioCredentials({ token: 'GITHUB_TOKEN', proxy: 'HTTPS_PROXY' }, { env, optional: ['proxy'] });
    assert.deepEqual(credentials, { token: 'ghp_secret' });
    assert.equal('proxy' in credentials, false);
    // Present, an optional one is returned like any other.
    assert.deepEqual(stdioCredentials({ proxy: 'HTTPS_PROXY' }, { env: { HTTPS_PROXY: 'http://proxy:3128' }, optional: ['proxy'] }), {
      proxy: 'http://proxy:3128',
    });
    // Optional does not cover the required ones.
    assert.throws(
      () => stdioCredentials({ token: 'GITHUB_TOKEN', proxy: 'HTTPS_PROXY' }, { env: {}, optional: ['proxy'] }),
      clientError('login_required', /^set GITHUB_TOKEN in/),
    );
  });
});
