export * from './store.js';
export { createMemoryStore } from './memory.js';
export { openSqliteStore } from './sqlite.js';
export { openPostgresStore, type PostgresStoreOptions } from './postgres.js';
