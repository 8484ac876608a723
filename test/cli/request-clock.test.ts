import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { CliError } from '../../src/cli/errors.js';
import { RequestClock } from '../../src/cli/request-clock.js';

/** A request that ends only when its signal aborts (a server that never answers). */
const hanging = (signal: AbortSignal): Promise<never> => new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted'))));

describe('RequestClock: the request timeout of call', () => {
  it('cuts off a request the server does not answer, saying so in one sentence', async () => {
    const clock = new RequestClock(100);
    const started = Date.now();
    await assert.rejects(clock.run('tools/list failed', hanging), (error: unknown) => {
      assert.ok(error instanceof CliError);
      assert.equal(error.message, 'tools/list failed: no answer from the server within 0 s');
      return true;
    });
    assert.ok(Date.now() - started >= 95, 'not before the budget is spent');
  });

  it('stops while a sign-in is under way and goes on with what was left afterwards', async () => {
    const clock = new RequestClock(150);
    const started = Date.now();
    const outcome = clock.run('call', async (signal) => {
      await sleep(50);
      clock.onSignIn('started');
      await sleep(300); // longer than the whole budget
      assert.equal(signal.aborted, false, 'the sign-in did not spend the budget');
      clock.onSignIn('ended');
      return hanging(signal);
    });
    await assert.rejects(outcome, CliError);
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 440 && elapsed < 1000, `50 + 300 + about 100 ms: ${elapsed}`);
  });

  it('passes a result and other errors through', async () => {
    const clock = new RequestClock(1000);
    assert.equal(await clock.run('x', async () => 42), 42);
    await assert.rejects(
      clock.run('x', async () => {
        throw new Error('refused');
      }),
      /^Error: refused$/,
    );
  });
});
