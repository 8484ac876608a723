/**
 * Counts the statements better-sqlite3 runs in this process whose SQL matches `pattern`: what a
 * store asked of the database, whatever it answered from memory.
 */
import Database from 'better-sqlite3';

export interface StatementCounter {
  readonly count: number;
  /** Puts better-sqlite3 back as it was. */
  restore(): void;
}

export function countSqliteStatements(pattern: RegExp): StatementCounter {
  const probe = new Database(':memory:');
  const prototype = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<'get' | 'all' | 'run', (...args: unknown[]) => unknown>;
  probe.close();
  const originals = { get: prototype.get, all: prototype.all, run: prototype.run };
  let count = 0;
  for (const method of ['get', 'all', 'run'] as const) {
    const original = originals[method];
    prototype[method] = function (this: Database.Statement, ...args: unknown[]) {
      if (pattern.test(this.source)) count++;
      return original.apply(this, args);
    };
  }
  return {
    get count() {
      return count;
    },
    restore: () => Object.assign(prototype, originals),
  };
}
