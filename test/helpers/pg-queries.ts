/**
 * Counts the statements node-postgres sends from this process whose text matches `pattern`: what
 * a store asked of the database, whatever it answered from memory.
 */
import pg from 'pg';

export interface QueryCounter {
  readonly count: number;
  reset(): void;
  /** Puts node-postgres back as it was. */
  restore(): void;
}

export function countQueries(pattern: RegExp): QueryCounter {
  const query = pg.Client.prototype.query;
  let count = 0;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const config = args[0] as { text?: string } | string;
    if (pattern.test(typeof config === 'string' ? config : (config.text ?? ''))) count++;
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  return {
    get count() {
      return count;
    },
    reset: () => void (count = 0),
    restore: () => void (pg.Client.prototype.query = query),
  };
}
