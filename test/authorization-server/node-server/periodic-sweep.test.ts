/**
 * The running server's sweep every interval: never two at once (a sweep of millions of rows outlasts the
 * interval), a failure logged and the next tick tried again, and stop() aborting a running sweep
 * and waiting for it to end, so the store is not closed under it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { periodicSweep } from '../../../src/authorization-server/node-server/periodic-sweep.js';

/** A sweep that runs until told to finish (or aborted), recording each start. */
function controllableSweep() {
  const started: AbortSignal[] = [];
  let finish: (() => void) | undefined;
  let ended = 0;
  const sweep = ({ signal }: { signal: AbortSignal }) => {
    started.push(signal);
    return new Promise<number>((resolve) => {
      const end = () => {
        ended++;
        resolve(0);
      };
      finish = end;
      signal.addEventListener('abort', () => setTimeout(end, 5), { once: true }); // the batch in flight ends first
    });
  };
  return { sweep, started, finish: () => finish?.(), ended: () => ended };
}

describe('periodic sweep (startAuthorizationServer)', () => {
  it('starts a sweep each interval, but none while the last one still runs', async (t) => {
    t.mock.timers.enable({ apis: ['setInterval'] });
    const s = controllableSweep();
    const sweeper = periodicSweep(s.sweep, 1000, () => assert.fail('no error expected'));
    t.mock.timers.tick(1000);
    assert.equal(s.started.length, 1);
    t.mock.timers.tick(1000);
    t.mock.timers.tick(1000);
    assert.equal(s.started.length, 1, 'the first is still running: no second one');
    s.finish();
    await new Promise((resolve) => setImmediate(resolve));
    t.mock.timers.tick(1000);
    assert.equal(s.started.length, 2, 'the next tick after it ended starts one');
    s.finish();
    await sweeper.stop();
  });

  it('logs a failed sweep and tries again at the next tick', async (t) => {
    t.mock.timers.enable({ apis: ['setInterval'] });
    const errors: unknown[] = [];
    let calls = 0;
    const sweeper = periodicSweep(
      async () => {
        calls++;
        if (calls === 1) throw new Error('database is locked');
        return 0;
      },
      1000,
      (error) => errors.push(error),
    );
    t.mock.timers.tick(1000);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal((errors[0] as Error).message, 'database is locked');
    t.mock.timers.tick(1000);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(calls, 2);
    await sweeper.stop();
  });

  it('stop() aborts the running sweep and resolves only once it has ended; no sweep starts after it', async (t) => {
    t.mock.timers.enable({ apis: ['setInterval'] });
    const s = controllableSweep();
    const sweeper = periodicSweep(s.sweep, 1000, () => assert.fail('no error expected'));
    t.mock.timers.tick(1000);
    assert.equal(s.started[0]!.aborted, false);
    const stopping = sweeper.stop();
    assert.equal(s.started[0]!.aborted, true, 'told at once');
    assert.equal(s.ended(), 0, 'the batch in flight is still running');
    await stopping;
    assert.equal(s.ended(), 1, 'stop() waited for the sweep to end');
    t.mock.timers.tick(5000);
    assert.equal(s.started.length, 1, 'no sweep after stop()');
  });

  it('stop() with no sweep running resolves at once', async () => {
    const sweeper = periodicSweep(
      async () => 0,
      60_000,
      () => undefined,
    );
    await sweeper.stop();
  });
});
