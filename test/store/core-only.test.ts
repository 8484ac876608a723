/**
 * The suite against a store with the core contract alone, as a store written for another database
 * may be: the core tests pass without any capability (none of them reaches for one), and the
 * tests of each capability are skipped, saying which capability they need.
 */
import { createMemoryStore } from '../../src/store/index.js';
import { runStoreSuite } from '../../src/store/testing/index.js';
import { withoutCapabilities } from '../helpers/core-store.js';

runStoreSuite({
  name: 'a store with the core contract only',
  open: async () => {
    const store = withoutCapabilities(createMemoryStore());
    return { store, close: () => store.close() };
  },
});
