/**
 * `context-auth/store/testing`: the behaviour suite every store passes, for a store written for
 * another database. It registers node:test tests; run the file that calls it with `node --test`:
 *
 *   import { runStoreSuite } from 'context-auth/store/testing';
 *   runStoreSuite({ name: 'my store', open: async () => { const store = await openMyStore(); return { store, close: () => store.close() }; } });
 */
export { runStoreSuite, type OpenedStore, type StoreSuiteOptions } from './suite.js';
