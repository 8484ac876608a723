import { createMemoryStore } from '../../src/store/index.js';
import { memoryStoreProbes } from '../../src/store/memory.js';
import { runStoreSuite } from '../../src/store/testing/index.js';

runStoreSuite({
  name: 'memory store',
  capabilities: 'all',
  open: async () => {
    const store = createMemoryStore();
    return { store, close: () => store.close(), probes: memoryStoreProbes(store) };
  },
});
