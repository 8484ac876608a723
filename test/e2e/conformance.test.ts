/**
 * The public MCP conformance suite (@modelcontextprotocol/conformance) runs our client entry
 * (conformance/client.ts) against its own test servers: every scenario of the `auth` and
 * `backcompat` suites of the newest release must pass with no warning (the runner counts a
 * warning as a failure), and the newest pre-release's auth scenarios for the later revisions:
 * all of 2025-11-25's and all of 2026-07-28's (whose servers speak the stateless lifecycle: the
 * client's first request there is server/discover, not initialize).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = resolve(import.meta.dirname, '../..');
const RUNNER = resolve(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
/** The newest pre-release, installed beside it under an alias. */
const NEXT_RUNNER = resolve(ROOT, 'node_modules/@modelcontextprotocol/conformance-next/dist/index.js');
// Version 0.1.16 imports fs.globSync, which Node 20 lacks; the shim adds it to the runner only.
const SHIM = resolve(ROOT, 'conformance/shim/register.mjs');
const CLIENT = `${process.execPath} --import tsx ${resolve(ROOT, 'conformance/client.ts')}`;

async function runSuite(suite: string, runner = RUNNER, extra: string[] = []): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', SHIM, runner, 'client', '--command', CLIENT, '--suite', suite, ...extra], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, output };
}

describe('MCP conformance suite, client side', () => {
  for (const suite of ['auth', 'backcompat']) {
    it(`passes every scenario of --suite ${suite}`, { timeout: 300_000 }, async () => {
      const { code, output } = await runSuite(suite);
      const summary = output.slice(output.indexOf('=== SUITE SUMMARY ==='));
      const total = /Total: (\d+) passed, (\d+) failed, (\d+) warnings/.exec(summary);
      assert.ok(total, `no summary in the runner's output:\n${output.slice(-3000)}`);
      assert.equal(`${total[2]} failed, ${total[3]} warnings`, '0 failed, 0 warnings', summary);
      assert.ok(Number(total[1]) > 0, 'some checks ran');
      assert.doesNotMatch(summary, /✗/, summary);
      assert.equal(code, 0, summary);
    });
  }

  it('the newest pre-release: every auth scenario of 2025-11-25', { timeout: 300_000 }, async () => {
    const { code, output } = await runSuite('auth', NEXT_RUNNER, ['--spec-version', '2025-11-25']);
    const summary = output.slice(output.indexOf('=== SUITE SUMMARY ==='));
    const total = /Total: (\d+) passed, (\d+) failed, (\d+) warnings/.exec(summary);
    assert.ok(total, `no summary in the runner's output:\n${output.slice(-3000)}`);
    assert.equal(`${total[2]} failed, ${total[3]} warnings`, '0 failed, 0 warnings', summary);
    assert.ok(summary.includes('auth/basic-cimd'), 'the client ID metadata document scenario ran');
    assert.equal(code, 0, summary);
  });

  it('the newest pre-release: every auth scenario of 2026-07-28', { timeout: 300_000 }, async () => {
    const { code, output } = await runSuite('auth', NEXT_RUNNER, ['--spec-version', '2026-07-28']);
    const summary = output.slice(output.indexOf('=== SUITE SUMMARY ==='));
    const total = /Total: (\d+) passed, (\d+) failed, (\d+) warnings/.exec(summary);
    assert.ok(total, `no summary in the runner's output:\n${output.slice(-3000)}`);
    assert.equal(`${total[2]} failed, ${total[3]} warnings`, '0 failed, 0 warnings', summary);
    // The two whose servers refuse anything but the stateless lifecycle, once our known gaps.
    for (const scenario of ['auth/scope-step-up', 'auth/scope-retry-limit']) assert.ok(summary.includes(scenario), `${scenario} ran`);
    assert.equal(code, 0, summary);
  });
});
