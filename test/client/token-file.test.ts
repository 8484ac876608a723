/**
 * Workload token files: read again when the platform rotates them (rewritten in place, or a new
 * file swapped in behind a symbolic link as Kubernetes does), and refused when someone other than
 * this account (or root) could have written them.
 */
import assert from 'node:assert/strict';
import { chmod, chown, mkdir, mkdtemp, rename, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ClientError } from '../../src/client/errors.js';
import { tokenFile, workloadTokenFile } from '../../src/client/token-file.js';

const posix = process.platform !== 'win32';
const CONTEXT = { issuer: 'https://as.example.com', tokenEndpoint: 'https://as.example.com/token', resource: 'https://mcp.example.com/mcp' };
const refused = (pattern: RegExp) => (error: Error) => error instanceof ClientError && error.code === 'assertion_unavailable' && pattern.test(error.message);

describe('workloadTokenFile', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'context-auth-token-file-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('gives the token, trimmed, and the new one once the file is rewritten', async () => {
    const file = join(dir, 'token');
    await writeFile(file, 'token-one\n', { mode: 0o600 });
    const assertion = workloadTokenFile(file);
    assert.equal(await assertion(CONTEXT), 'token-one');
    await writeFile(file, 'token-two\n');
    // The same size, rewritten a second later: the modification time tells.
    const later = new Date(Date.now() + 1000);
    await utimes(file, later, later);
    assert.equal(await assertion(CONTEXT), 'token-two');
  });

  it('follows a rotation the Kubernetes way: a new file behind a swapped symbolic link', async () => {
    const root = join(dir, 'projected');
    await mkdir(join(root, '..2026_01'), { recursive: true });
    await mkdir(join(root, '..2026_02'));
    await writeFile(join(root, '..2026_01', 'token'), 'first-rotation', { mode: 0o644 });
    await writeFile(join(root, '..2026_02', 'token'), 'second-rotation', { mode: 0o644 });
    await symlink('..2026_01', join(root, '..data'));
    await symlink('..data/token', join(root, 'token'));
    const assertion = workloadTokenFile(join(root, 'token'));
    assert.equal(await assertion(CONTEXT), 'first-rotation');
    await symlink('..2026_02', join(root, '..data_tmp'));
    await rename(join(root, '..data_tmp'), join(root, '..data'));
    assert.equal(await assertion(CONTEXT), 'second-rotation');
  });

  it('refuses a file group or others may write, even one read before', { skip: !posix }, async () => {
    const file = join(dir, 'writable');
    await writeFile(file, 'token', { mode: 0o600 });
    const assertion = workloadTokenFile(file);
    assert.equal(await assertion(CONTEXT), 'token');
    for (const mode of [0o620, 0o602]) {
      await chmod(file, mode);
      await assert.rejects(Promise.resolve(assertion(CONTEXT)), refused(/may be written by group or others/));
    }
  });

  it("refuses a file another account owns (root's is fine: platforms write them as root)", { skip: !posix || process.getuid?.() !== 0 }, async () => {
    // Only root can give a file away; running as root, the file is someone else's once chowned.
    const file = join(dir, 'someone-elses');
    await writeFile(file, 'token', { mode: 0o600 });
    await chown(file, 4242, 4242);
    await assert.rejects(Promise.resolve(workloadTokenFile(file)(CONTEXT)), refused(/belongs to another account \(uid 4242/));
  });

  it('refuses a missing file, an empty one, and a folder, saying which', async () => {
    await assert.rejects(Promise.resolve(workloadTokenFile(join(dir, 'absent'))(CONTEXT)), refused(/workload token file .*absent does not exist/));
    const empty = join(dir, 'empty');
    await writeFile(empty, '\n', { mode: 0o600 });
    await assert.rejects(Promise.resolve(workloadTokenFile(empty)(CONTEXT)), refused(/is empty/));
    await assert.rejects(tokenFile(dir, 'ID token file')(), refused(/the ID token file .* is not a regular file/));
  });
});
