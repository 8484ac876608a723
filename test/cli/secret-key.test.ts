import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { loadSecretBox, SECRET_KEY_FILE } from '../../src/cli/secret-key.js';
import { generateSecretKey } from '../../src/core/secret-box.js';

const folder = (): string => fs.mkdtempSync(path.join(os.tmpdir(), 'ca-key-'));

describe('the secret key for upstream tokens', () => {
  it('is created once in the data folder, mode 0600, and read back the same', () => {
    const dir = folder();
    const first = loadSecretBox({ dataFolder: dir, env: {} });
    assert.equal(fs.statSync(path.join(dir, SECRET_KEY_FILE)).mode & 0o777, 0o600);
    const sealed = first.box.seal('token', 'grant');
    assert.deepEqual(loadSecretBox({ dataFolder: dir, env: {} }).box.open(sealed, 'grant'), { ok: true, value: 'token' });
  });

  it('a key file others can read is refused', () => {
    const dir = folder();
    loadSecretBox({ dataFolder: dir, env: {} });
    fs.chmodSync(path.join(dir, SECRET_KEY_FILE), 0o644);
    assert.throws(() => loadSecretBox({ dataFolder: dir, env: {} }), /can be read by other users/);
  });

  it('$CONTEXT_AUTH_SECRET_KEY wins, and is required with PostgreSQL', () => {
    const key = generateSecretKey();
    const fromEnv = loadSecretBox({ dataFolder: null, env: { CONTEXT_AUTH_SECRET_KEY: key } });
    assert.equal(fromEnv.source, '$CONTEXT_AUTH_SECRET_KEY');
    assert.throws(() => loadSecretBox({ dataFolder: null, env: {} }), /needs \$CONTEXT_AUTH_SECRET_KEY/);
    assert.throws(() => loadSecretBox({ dataFolder: null, env: { CONTEXT_AUTH_SECRET_KEY: 'short' } }), /not 32 bytes/);
  });
});
