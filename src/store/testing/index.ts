/**
 * `context-auth/store/testing`: the behaviour suite every store passes, for a store written for
 * another database, one file per aggregate of the contract and per capability. It registers its
 * tests with node:test by default (run the file with `node --test`), or with the describe and it
 * a caller gives (Vitest's, Jest's):
 *
 *   import { runStoreSuite } from 'context-auth/store/testing';
 *   runStoreSuite({ name: 'my store', open: async () => { const store = await openMyStore(); return { store, close: () => store.close() }; } });
 *
 *   import { describe, it } from 'vitest';
 *   runStoreSuite({ name: 'my store', open }, { describe, it });
 */
export { runStoreSuite, type OpenedStore, type StoreSuiteOptions } from './suite.js';
export type { TestRunner } from './runner.js';
export type { RecordKind, StoreProbes } from './probes.js';
