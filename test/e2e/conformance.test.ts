/**
 * The public MCP conformance suite (@modelcontextprotocol/conformance) runs our client entry
 * (conformance/client.ts) against its own test servers: every scenario of the `auth` and
 * `backcompat` suites of the newest release must pass with no warning (the runner counts a
 * warning as a failure), and the newest pre-release's auth scenarios for the later revisions:
 * all of 2025-11-25's and all of 2026-07-28's (whose servers speak the stateless lifecycle: the
 * client's first request there is server/discover, not initialize). And the pre-release's client
 * credentials extension scenarios (SEP-1046), with a client secret and with a private key, and the
 * jwt-bearer ones: workload identity federation (SEP-1933) and enterprise-managed authorization
 * (SEP-990: an ID token exchanged for an ID-JAG at the identity provider, then presented); and
 * DPoP (SEP-1932): a bound token asked for with a proof, presented with the DPoP scheme and a fresh
 * proof per request, the token request and the MCP request each sent once more with a nonce asked for.
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
  return runClient(runner, ['--suite', suite, ...extra]);
}

async function runClient(runner: string, args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', SHIM, runner, 'client', '--command', CLIENT, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  // 'close', not 'exit': the output may still be in the pipes when the process has exited.
  const [code] = (await once(child, 'close')) as [number | null];
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

  // Each scenario with the checks that show the token request was the one it asks for.
  const extensions: [string, string[]][] = [
    ['auth/client-credentials-basic', ['client-credentials-basic-auth']],
    ['auth/client-credentials-jwt', ['client-credentials-jwt-verified']],
    ['auth/wif-jwt-bearer', ['wif-assertion-verified']],
    ['auth/enterprise-managed-authorization', ['complete-flow-token-exchange', 'complete-flow-jwt-bearer']],
    ['auth/dpop', ['sep-1932-client-token-request-proof', 'sep-1932-client-dpop-auth-scheme', 'sep-1932-client-fresh-proof']],
    ['auth/dpop-nonce', ['sep-1932-client-token-request-proof', 'sep-1932-client-as-nonce', 'sep-1932-client-rs-nonce']],
  ];
  for (const [scenario, checks] of extensions) {
    it(`the newest pre-release: the authorization extension ${scenario}`, { timeout: 120_000 }, async () => {
      const { code, output } = await runClient(NEXT_RUNNER, ['--scenario', scenario]);
      const results = output.slice(output.indexOf('Test Results:'));
      const total = /Passed: (\d+)\/(\d+), (\d+) failed, (\d+) warnings/.exec(results);
      assert.ok(total, `no results in the runner's output:\n${output.slice(-3000)}`);
      assert.equal(`${total[3]} failed, ${total[4]} warnings`, '0 failed, 0 warnings', results);
      assert.ok(Number(total[1]) > 0, 'some checks ran');
      for (const check of checks) assert.match(output, new RegExp(`\\[${check}\\s*\\] \\S*SUCCESS`), `${check} succeeded`);
      assert.match(results, /OVERALL: PASSED/, results);
      assert.equal(code, 0, results);
    });
  }
});
