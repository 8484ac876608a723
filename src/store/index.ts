/**
 * `context-auth/store`: the interface, its errors and the in-memory store. The SQL stores have
 * entry points of their own, `context-auth/store/sqlite` and `context-auth/store/postgres`, so
 * importing one never loads the other's native driver.
 */
export * from './store.js';
export { createMemoryStore } from './memory.js';
