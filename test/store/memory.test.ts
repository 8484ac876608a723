import { createMemoryStore } from '../../src/store/index.js';
import { runStoreSuite } from './store-suite.js';

runStoreSuite('memory store', () => createMemoryStore());
