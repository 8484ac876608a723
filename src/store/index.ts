export * from './store.js';
export { createMemoryStore } from './memory.js';
export { openSqliteStore } from './sqlite.js';
