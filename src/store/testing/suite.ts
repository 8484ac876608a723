/**
 * The behaviour suite every store passes: the memory, SQLite and PostgreSQL stores, and a store
 * written for another database. One file per aggregate of the contract, and per capability; each
 * test opens a fresh, empty store with `open` and closes it when done. The tests of an optional
 * capability run where the store has it, and are skipped, saying so, where it does not (unless
 * the store is expected to have it: then they fail).
 */
import assert from 'node:assert/strict';
import { capabilitiesOf, CAPABILITY_METHODS, CORE_METHODS, type StoreCapability } from '../capabilities.js';
import type { FullStore, Store } from '../store.js';
import { auditEventTests } from './audit-events.js';
import { clientTests } from './clients.js';
import { consoleTests } from './console.js';
import { copyTests } from './copies.js';
import { deviceAuthorizationTests } from './devices.js';
import { grantTests } from './grants.js';
import type { Suite } from './harness.js';
import { interactionTests } from './interactions.js';
import { keyTests } from './keys.js';
import { peopleTests } from './people.js';
import { RECORD_KINDS, type RecordKind, type StoreProbes } from './probes.js';
import { rateBucketTests } from './rate-buckets.js';
import { refreshRetryTests } from './refresh-retry.js';
import { refreshWithAssertionTests } from './refresh-with-assertion.js';
import { replayTests } from './replay.js';
import { revocationFeedTests } from './revocations.js';
import { NODE_TEST, skipTest, type TestRunner } from './runner.js';
import { sessionTests } from './sessions.js';
import { upkeepTests } from './upkeep.js';

export interface OpenedStore {
  store: Store;
  /** Closes the store, and removes whatever `open` made for it if it should not outlive the test. */
  close(): Promise<void>;
  /** Reads what this store holds, for the checks behind the contract (probes.ts); without it they are left out. */
  probes?: StoreProbes;
}

export interface StoreSuiteOptions {
  /** The name the suite's tests are reported under. */
  name: string;
  /** A fresh, empty store for one test. */
  open(): Promise<OpenedStore>;
  /**
   * Capabilities the store is meant to have ('all' for every one): a test checks they are there,
   * and their tests fail rather than skip. Without this, the tests of a capability the store does
   * not have are skipped, each with the reason.
   */
  capabilities?: readonly StoreCapability[] | 'all';
  /**
   * Capabilities the store does not have, whose tests are then not registered at all (a test
   * checks they are absent): for a runner that cannot skip a test once it runs (Jest).
   */
  lacks?: readonly StoreCapability[];
  /**
   * The store's sweepExpired deletes in batches and rests through `options.pause` between them
   * (as the SQL stores do): checked when true. False (the default) for a sweep in one pass.
   */
  batchedSweep?: boolean;
}

const ALL_CAPABILITIES = Object.keys(CAPABILITY_METHODS) as StoreCapability[];

/** The files of the suite: the core's aggregates, then the capabilities'. */
const TESTS: Array<(suite: Suite) => void> = [
  clientTests,
  peopleTests,
  interactionTests,
  sessionTests,
  grantTests,
  replayTests,
  keyTests,
  deviceAuthorizationTests,
  refreshRetryTests,
  refreshWithAssertionTests,
  revocationFeedTests,
  rateBucketTests,
  consoleTests,
  auditEventTests,
  upkeepTests,
  copyTests,
];

/**
 * Registers the suite's tests for the store `options.open` opens, with `runner`'s describe and it
 * (node:test's where none is given: run the file with `node --test`).
 */
export function runStoreSuite(options: StoreSuiteOptions, runner: TestRunner = NODE_TEST): void {
  const expected = options.capabilities === 'all' ? ALL_CAPABILITIES : (options.capabilities ?? []);
  const lacks = options.lacks ?? [];
  const both = expected.filter((capability) => lacks.includes(capability));
  if (both.length > 0) throw new Error(`capabilities and lacks both name ${both.join(', ')}`);

  /** The running test's store and probes, and who is told of each new store. */
  let opened: OpenedStore | undefined;
  const users: Array<(store: FullStore) => void> = [];

  /**
   * A test body run on a fresh store: skipped (or, expected, failed) when the store lacks one of
   * `needs`. Its parameters are read from `arguments`, so that it declares none (a runner that sees
   * one would wait for a done callback).
   */
  const onFreshStore = (needs: readonly StoreCapability[], body: () => Promise<void>) =>
    async function (this: unknown, ...args: unknown[]): Promise<void> {
      const current = await options.open();
      try {
        const present = capabilitiesOf(current.store);
        const missing = needs.filter((capability) => !present.includes(capability));
        const missingExpected = missing.filter((capability) => expected.includes(capability));
        assert.deepEqual(missingExpected, [], `the store was expected to have these capabilities: ${missingExpected.join(', ')}`);
        if (missing.length > 0) {
          skipTest(args[0], this, `the store has no ${missing.join(' or ')} capability (optional)`, missing[0]!);
          return;
        }
        opened = current;
        for (const use of users) use(current.store as FullStore);
        await body();
      } finally {
        opened = undefined;
        await current.close();
      }
    };

  const suite: Suite = {
    describe: (name, body) => void runner.describe(name, body),
    it: (name, body) => void runner.it(name, onFreshStore([], body)),
    itNeeds: (needs, name, body) => {
      const wanted = typeof needs === 'string' ? [needs] : needs;
      if (wanted.some((capability) => lacks.includes(capability))) return;
      runner.it(`${name} [${wanted.join(', ')}]`, onFreshStore(wanted, body));
    },
    eachStore: (use) => void users.push(use),
    batchedSweep: options.batchedSweep ?? false,
    counts: async () => {
      const probes = opened?.probes;
      if (!probes) return undefined;
      const counted = await Promise.all(RECORD_KINDS.map(async (kind) => [kind, await probes.countRecords(kind)] as const));
      return Object.fromEntries(counted) as Record<RecordKind, number>;
    },
  };

  runner.describe(options.name, () => {
    suite.it('has every method of the core contract', async () => {
      const store = opened!.store as unknown as Record<string, unknown>;
      const missing = ['close', ...Object.values(CORE_METHODS).flat()].filter((method) => typeof store[method] !== 'function');
      assert.deepEqual(missing, [], `the store lacks ${missing.join(', ')}`);
    });
    if (expected.length > 0) {
      suite.it(`has the capabilities it is meant to have: ${expected.join(', ')}`, async () => {
        assert.deepEqual(
          capabilitiesOf(opened!.store).filter((capability) => expected.includes(capability)),
          expected,
        );
      });
    }
    if (lacks.length > 0) {
      suite.it(`lacks what it says it lacks: ${lacks.join(', ')}`, async () => {
        assert.deepEqual(
          capabilitiesOf(opened!.store).filter((capability) => lacks.includes(capability)),
          [],
        );
      });
    }
    for (const tests of TESTS) tests(suite);
  });
}
