/**
 * The published suite under a runner other than node:test: a minimal one written here, which
 * registers with its own describe and it and runs the tests itself, as Vitest or Jest would. It
 * shows that the suite needs nothing of node:test, that it skips through the running test's
 * context where the runner gives one (Vitest's and node:test's do) and leaves out what `lacks`
 * names where it cannot (Jest), and that its probes see what the contract alone cannot.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMemoryStore } from '../../src/store/index.js';
import { memoryStoreProbes } from '../../src/store/memory.js';
import type { FullStore, Store } from '../../src/store/store.js';
import { runStoreSuite, type StoreSuiteOptions, type TestRunner } from '../../src/store/testing/index.js';
import { withoutCapabilities } from '../helpers/core-store.js';

interface Outcome {
  name: string;
  outcome: 'passed' | 'failed' | 'skipped';
  detail?: string;
}

/**
 * A runner of its own: describe and it collect the tests, `run` runs them one after another. With
 * `skip`, a test's body gets a context whose skip(reason) marks it skipped, as Vitest's does;
 * without, it gets nothing, as in Jest.
 */
function minimalRunner({ skip }: { skip: boolean }): { runner: TestRunner; run(): Promise<Outcome[]> } {
  const tests: Array<{ name: string; body: (...args: unknown[]) => Promise<void> }> = [];
  const path: string[] = [];
  const runner: TestRunner = {
    describe: (name, body) => {
      path.push(name);
      body();
      path.pop();
    },
    it: (name, body) => void tests.push({ name: [...path, name].join(' > '), body: body as (...args: unknown[]) => Promise<void> }),
  };
  const run = async (): Promise<Outcome[]> => {
    const outcomes: Outcome[] = [];
    for (const test of tests) {
      let skipped: string | undefined;
      const context = skip ? [{ skip: (reason: string) => void (skipped = reason) }] : [];
      try {
        await test.body(...context);
        outcomes.push(skipped === undefined ? { name: test.name, outcome: 'passed' } : { name: test.name, outcome: 'skipped', detail: skipped });
      } catch (error) {
        outcomes.push({ name: test.name, outcome: 'failed', detail: error instanceof Error ? error.message : String(error) });
      }
    }
    return outcomes;
  };
  return { runner, run };
}

const count = (outcomes: Outcome[], outcome: Outcome['outcome']): number => outcomes.filter((o) => o.outcome === outcome).length;
const failures = (outcomes: Outcome[]): string[] => outcomes.filter((o) => o.outcome === 'failed').map((o) => `${o.name}: ${o.detail}`);

/** The suite's options for a store `make` makes on a memory store, with the memory store's probes where asked. */
function suiteOn(make: (memory: FullStore) => Store, options: Partial<StoreSuiteOptions> = {}, probes = true): StoreSuiteOptions {
  return {
    name: 'memory store',
    open: async () => {
      const memory = createMemoryStore();
      const store = make(memory);
      return { store, close: () => store.close(), ...(probes ? { probes: memoryStoreProbes(memory) } : {}) };
    },
    ...options,
  };
}

describe('the store suite under another runner', () => {
  it('registers with the runner it is given and runs whole there: every test of a store with every capability passes', async () => {
    const { runner, run } = minimalRunner({ skip: true });
    runStoreSuite(
      suiteOn((memory) => memory, { capabilities: 'all' }),
      runner,
    );
    const outcomes = await run();
    assert.deepEqual(failures(outcomes), []);
    assert.equal(count(outcomes, 'skipped'), 0);
    assert.ok(outcomes.length > 100, `${outcomes.length} tests`);
    assert.ok(outcomes.some((o) => o.name === 'memory store > refresh tokens > 50 concurrent rotations: exactly one wins and exactly one new token is stored'));
  });

  it("skips the tests of a capability the store lacks through the test's context, saying which", async () => {
    const { runner, run } = minimalRunner({ skip: true });
    runStoreSuite(
      suiteOn((memory) => withoutCapabilities(memory), {}, false),
      runner,
    );
    const outcomes = await run();
    assert.deepEqual(failures(outcomes), []);
    const skipped = outcomes.filter((o) => o.outcome === 'skipped');
    assert.ok(skipped.length > 50);
    assert.ok(
      skipped.every((o) => /^the store has no \w+( or \w+)* capability \(optional\)$/.test(o.detail ?? '')),
      skipped[0]?.detail,
    );
    assert.ok(count(outcomes, 'passed') > 50);
  });

  it('where the runner cannot skip a running test, such a test fails saying so, and `lacks` leaves those tests out', async () => {
    const core = (memory: FullStore) => withoutCapabilities(memory, ['deviceAuthorization']);
    const unskippable = minimalRunner({ skip: false });
    runStoreSuite(suiteOn(core, {}, false), unskippable.runner);
    const failed = failures(await unskippable.run());
    assert.ok(
      failed.length > 0 && failed.every((f) => f.includes("this runner cannot skip a test once it runs: give lacks: ['deviceAuthorization']")),
      failed[0],
    );

    const declared = minimalRunner({ skip: false });
    runStoreSuite(suiteOn(core, { lacks: ['deviceAuthorization'] }, false), declared.runner);
    const outcomes = await declared.run();
    assert.deepEqual(failures(outcomes), []);
    assert.ok(!outcomes.some((o) => o.name.includes('device authorizations')), 'the device tests are not registered');
    assert.ok(outcomes.some((o) => o.name === 'memory store > lacks what it says it lacks: deviceAuthorization' && o.outcome === 'passed'));
  });

  it('with probes, sees a write the contract cannot: a rotation that also leaves a record of another kind fails', async () => {
    // A store whose refresh also keeps a record of another kind, one no sweep of the suite reaches: every answer it gives is right.
    const leaky = (store: FullStore): FullStore => ({
      ...store,
      refreshGrant: async (request) => {
        const result = await store.refreshGrant(request);
        if (result.status === 'ok') await store.useAssertionId(`leak-${request.tokenHash}`, request.now + 1e9, request.now);
        return result;
      },
    });
    const withProbes = minimalRunner({ skip: true });
    runStoreSuite(suiteOn(leaky, { name: 'leaky store', capabilities: 'all' }), withProbes.runner);
    const failed = failures(await withProbes.run());
    assert.ok(
      failed.some((f) =>
        f.startsWith(
          'leaky store > refresh tokens > rotates: the old one is gone, a spent record of it is kept, the new one is stored: the old token became a spent record',
        ),
      ),
      failed.join('\n'),
    );

    const blind = minimalRunner({ skip: true });
    runStoreSuite(suiteOn(leaky, { name: 'leaky store', capabilities: 'all' }, false), blind.runner);
    assert.deepEqual(failures(await blind.run()), [], 'without probes, the contract alone cannot tell');
  });
});
