/**
 * Group commit: the transactional programs that arrive during one turn of the event loop run
 * together in one transaction, each in a savepoint of its own, and commit once. Concurrent
 * requests (sixteen clients refreshing at once) then share one commit — one write of the pages
 * they touch — instead of paying one each.
 *
 * The batch runs in the loop's check phase (setImmediate), after the I/O callbacks of the turn
 * that brought its programs. Under light load nothing waits: a turn's first program runs at once,
 * alone, and only the ones after it in the same turn wait for the batch. Once a batch held more
 * than one, the next turns' first programs wait too, until a batch holds one or none again.
 *
 * The scheduling serves any work that is cheaper done together: both drivers commit their
 * transactional programs with it (sqlite.ts, postgres.ts), and PostgreSQL's decorators also send
 * one turn's refreshes as one statement (postgres-refresh-batch.ts) and its client lookups as one
 * query (postgres-client-lookups.ts).
 *
 * Semantics are those of one transaction per program: programs run one after another, in the
 * order they arrived, each seeing what the ones before it wrote (a refresh token presented twice
 * in one batch is spent once); a program that fails rolls back to its savepoint and is rejected
 * alone; no program is answered before the COMMIT that holds its work, and when the transaction
 * as a whole fails (its COMMIT included) every program of the batch is rejected with that error.
 */
import type { Program } from './sql-store.js';
import { S } from './statements.js';

/** Most programs one batch holds, so that a batch never keeps the event loop (or a connection) long. */
export const GROUP_COMMIT_MOST = 128;

/** One program's outcome within a batch that committed. */
export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Runs `programs` in one transaction and answers each one's outcome once it committed; throws
 * when the transaction failed as a whole, which rejects every program of the batch.
 */
export type CommitBatch<Item = Program<unknown>> = (items: Item[]) => Outcome[] | Promise<Outcome[]>;

interface Waiting<Item> {
  item: Item;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export interface GroupCommit<Item = Program<unknown>> {
  /** Queues an item (a program) for the next batch; settles after that batch's COMMIT. */
  transaction<T>(item: Item): Promise<T>;
  /** Runs whatever is queued now (before closing the database). */
  flush(): Promise<void>;
}

export interface GroupCommitOptions {
  /** Most items in one batch (GROUP_COMMIT_MOST). */
  most?: number;
  /**
   * Most batches running at once (unbounded by default). At the bound, what arrives waits for a
   * batch to finish and then goes as one: a batch grows with the load instead of the load being
   * spread over many small ones.
   */
  inFlight?: number;
}

export function groupCommit<Item = Program<unknown>>(
  commit: CommitBatch<Item>,
  translate: (err: unknown) => unknown,
  { most = GROUP_COMMIT_MOST, inFlight = Infinity }: GroupCommitOptions = {},
): GroupCommit<Item> {
  let waiting: Waiting<Item>[] = [];
  let scheduled = false;
  const running = new Set<Promise<void>>();
  /** Programs that arrived this turn, run at once or queued. */
  let arrived = 0;
  /** Whether the last batch held more than one program: then a turn's first program waits for the others too. */
  let busy = false;

  const rejectAll = (batch: Waiting<Item>[], err: unknown): void => {
    const error = translate(err);
    for (const w of batch) w.reject(error);
  };
  const settleAll = (batch: Waiting<Item>[], outcomes: Outcome[]): void => {
    batch.forEach((w, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) w.resolve(outcome.value);
      else w.reject(outcome.error);
    });
  };

  /** Runs a batch; a driver that commits synchronously (SQLite) has its programs settled at once, with no turn of promises between. */
  const start = (batch: Waiting<Item>[]): Promise<void> => {
    let committed: Outcome[] | Promise<Outcome[]>;
    try {
      committed = commit(batch.map((w) => w.item));
    } catch (err) {
      rejectAll(batch, err);
      return Promise.resolve();
    }
    if (Array.isArray(committed)) {
      settleAll(batch, committed);
      return Promise.resolve();
    }
    const done = committed
      .then(
        (outcomes) => settleAll(batch, outcomes),
        (err: unknown) => rejectAll(batch, err),
      )
      .finally(() => {
        running.delete(done);
        if (waiting.length > 0) schedule();
      });
    running.add(done);
    return done;
  };

  const flush = (): Promise<void> => {
    scheduled = false;
    // A batch that finishes schedules the next.
    if (running.size >= inFlight) return Promise.resolve();
    busy = waiting.length > 1;
    const batch = waiting.length <= most ? waiting : waiting.slice(0, most);
    waiting = waiting.length <= most ? [] : waiting.slice(most);
    arrived = waiting.length;
    // The rest waits for the next turn, so that I/O gets its turn in between.
    if (waiting.length > 0) schedule();
    return batch.length === 0 ? Promise.resolve() : start(batch);
  };

  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => void flush());
  };

  return {
    transaction: <T>(item: Item): Promise<T> =>
      new Promise<T>((resolve, reject) => {
        const entry = { item, resolve: resolve as (value: unknown) => void, reject };
        schedule();
        if (++arrived === 1 && !busy && running.size < inFlight) void start([entry]);
        else waiting.push(entry);
      }),
    flush: async () => {
      while (waiting.length > 0) {
        await Promise.all(running);
        await flush();
      }
      await Promise.all(running);
    },
  };
}

/**
 * The program without its request to commit without waiting for the disk (a sweep batch's, which
 * runs apart, should one ever join a batch): in a batch, that would apply to everyone's commit,
 * and a request's acknowledged work must be durable.
 */
export function* durable<T>(program: Program<T>): Program<T> {
  let next = program.next();
  while (!next.done) next = program.next(next.value.statement === S.noSyncCommit ? 0 : yield next.value);
  return next.value;
}
