import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { AuditFile } from '../../src/cli/audit-file.js';

describe('the audit log file', () => {
  it('is created readable by its owner only and appended to, keeping what was there', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'audit-')), 'audit.log');
    writeFileSync(path, 'earlier\n', { mode: 0o600 });
    const file = new AuditFile(path, () => {});
    file.write('{"event":"login"}\n');
    file.close();
    assert.equal(readFileSync(path, 'utf8'), 'earlier\n{"event":"login"}\n');
    const fresh = join(mkdtempSync(join(tmpdir(), 'audit-')), 'new.log');
    new AuditFile(fresh, () => {}).close();
    assert.equal(statSync(fresh).mode & 0o777, 0o600);
  });

  it('after a rotation and a reopen, writes to a new file at the path', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'audit-')), 'audit.log');
    const file = new AuditFile(path, () => {});
    file.write('first\n');
    renameSync(path, `${path}.1`);
    file.write('second\n'); // still the rotated file, until told
    file.reopen();
    file.write('third\n');
    file.close();
    assert.equal(readFileSync(`${path}.1`, 'utf8'), 'first\nsecond\n');
    assert.equal(readFileSync(path, 'utf8'), 'third\n');
    assert.equal(statSync(path).mode & 0o777, 0o600);
  });

  it('keeps writing to the old file when the path cannot be reopened, and says so', () => {
    const folder = mkdtempSync(join(tmpdir(), 'audit-'));
    const path = join(folder, 'audit.log');
    const warnings: string[] = [];
    const file = new AuditFile(path, (message) => warnings.push(message));
    renameSync(folder, `${folder}-gone`);
    file.reopen();
    file.write('kept\n');
    file.close();
    assert.equal(readFileSync(join(`${folder}-gone`, 'audit.log'), 'utf8'), 'kept\n');
    assert.match(warnings.join('\n'), /cannot reopen the audit log .*ENOENT; still writing to the file as it was/);
  });
});
