/**
 * PostgreSQL's refreshes of one turn of the event loop in one statement: a decorator of the grants
 * aggregate, which postgres.ts puts around the SQL store. Each refresh alone is one statement and
 * one commit (the store's refreshGrant); the refreshes that arrive together go as one statement
 * of their own, its parameters arrays, and commit once. With at most two such statements under
 * way, what arrives meanwhile waits and goes as one: batches grow with the load.
 *
 * Every refresh gets the answer it would get alone. One the batch leaves (refused, or another of
 * the batch came first to its grant) runs alone once the batch committed, and learns why. A
 * statement that fails for a reason other than the database being away (a new hash already
 * taken, say), or that PostgreSQL chose to break a deadlock with (a revocation of many grants at
 * once, which locks them in no order), leaves every refresh of it to run alone, each to its own
 * answer: nothing of it was committed.
 */
import type { Statement } from './sql/dialect.js';
import { postgres } from './sql/dialect.js';
import { groupCommit, type Outcome } from './sql/group-commit.js';
import { refreshRows, type Row } from './sql/sql-store.js';
import { SPEND_REFRESH } from './sql/statements.js';
import type { GrantStore, RefreshRequest, RefreshResult } from './store.js';

/** The columns of one refresh in refreshManyInOneStatement, each passed as an array. */
const REFRESH_MANY_COLUMNS = [
  ['token_hash', 'text'],
  ['token_key', 'text'],
  ['client_id', 'text'],
  ['now', 'bigint'],
  ['access_expires_at', 'bigint'],
  ['upstream_checked', 'boolean'],
  ['next_hash', 'text'],
  ['next_key', 'text'],
  ['next_created_at', 'bigint'],
  ['next_expires_at', 'bigint'],
] as const;

/**
 * The refreshes that arrived together, in one statement (one round trip, one commit), each doing
 * what refreshInOneStatement (sql/statements.ts) does. The parameters are arrays, one element a
 * refresh; each row returned names the refresh by its place (`ord`, from 1). A refresh returns no
 * row when it is refused, or when another of the batch came first to the same grant (the same
 * token twice, say): the caller runs those alone, after this commits, and learns why.
 *
 * The grants are locked in the order of their ids before any is updated, so two batches meeting
 * on the same grants (two replicas, or a token replayed across batches) wait for each other
 * instead of deadlocking. A lock re-checks the grant's newest row: one revoked meanwhile is left
 * out, as refreshInOneStatement's UPDATE leaves it.
 */
const REFRESH_MANY: Statement = {
  name: 'refreshManyInOneStatement',
  text: `
  WITH input AS (
    SELECT * FROM unnest(${REFRESH_MANY_COLUMNS.map(([name, type]) => `CAST(:${name} AS ${type}[])`).join(', ')})
      WITH ORDINALITY AS i(${REFRESH_MANY_COLUMNS.map(([name]) => name).join(', ')}, ord)
  ), target AS (
    SELECT DISTINCT ON (r.grant_id) i.*, r.grant_id, r.expires_at AS spent_expires_at
    FROM input i JOIN refresh_tokens r ON r.token_hash = i.token_hash AND r.client_id = i.client_id AND r.expires_at > i.now
    ORDER BY r.grant_id, i.ord
  ), locked AS (
    SELECT grants.id FROM grants JOIN target t ON grants.id = t.grant_id
    WHERE grants.revoked_at IS NULL AND (grants.upstream_session_id IS NULL OR t.upstream_checked)
    ORDER BY grants.id FOR UPDATE OF grants
  ), g AS (
    UPDATE grants SET access_expires_at = greatest(coalesce(grants.access_expires_at, 0), t.access_expires_at)
    FROM target t
    WHERE grants.id = t.grant_id AND grants.id IN (SELECT id FROM locked)
      AND grants.revoked_at IS NULL AND (grants.upstream_session_id IS NULL OR t.upstream_checked)
    RETURNING grants.*
  ), rotated AS (
    UPDATE refresh_tokens SET token_hash = t.next_hash, created_at = t.next_created_at, expires_at = t.next_expires_at
    FROM target t JOIN g ON g.id = t.grant_id
    WHERE refresh_tokens.token_hash = t.token_hash AND refresh_tokens.expires_at > t.now
    RETURNING t.ord, refresh_tokens.grant_id, refresh_tokens.scope
  ), spent AS (
    ${SPEND_REFRESH}
    SELECT t.token_key, t.grant_id, t.now, t.spent_expires_at, t.next_key FROM target t JOIN rotated ON rotated.ord = t.ord
    ON CONFLICT (token_key) DO NOTHING
  )
  SELECT rotated.ord, g.*, rotated.scope AS token_scope FROM g JOIN rotated ON rotated.grant_id = g.id`,
};

export interface RefreshBatchOptions {
  /** Runs one statement on a pooled connection and returns its rows (errors as the driver raised them). */
  query(statement: Statement, params: Row): Promise<Row[]>;
  /** Whether an error means the database cannot answer now: the batch then fails as a whole, rather than its refreshes running alone. */
  failsTheBatch(err: unknown): boolean;
  translate(err: unknown): unknown;
}

export interface RefreshBatches<S> {
  /** The store, its refreshGrant batched. */
  store: S;
  /** Runs whatever is queued now (before closing the store). */
  flush(): Promise<void>;
}

export function batchRefreshes<S extends Pick<GrantStore, 'refreshGrant'>>(store: S, options: RefreshBatchOptions): RefreshBatches<S> {
  const rows = refreshRows(postgres);
  const commitBatch = async (requests: RefreshRequest[]): Promise<Outcome[]> => {
    // A batch of one is the store's own refresh, in its place in the queue.
    if (requests.length === 1) {
      try {
        return [{ ok: true, value: await store.refreshGrant(requests[0]!) }];
      } catch (error) {
        return [{ ok: false, error }];
      }
    }
    const each = requests.map(rows.params);
    const params = Object.fromEntries(REFRESH_MANY_COLUMNS.map(([name]) => [name, each.map((refresh) => refresh[name])]));
    let returned: Row[];
    try {
      returned = await options.query(REFRESH_MANY, params);
    } catch (err) {
      if (options.failsTheBatch(err)) throw err;
      return requests.map(() => ({ ok: true, value: 'alone' }));
    }
    const byPlace = new Map(returned.map((row) => [Number(row.ord), row]));
    return requests.map((_, i) => {
      const row = byPlace.get(i + 1);
      return { ok: true, value: row ? rows.refreshed(row) : 'alone' };
    });
  };
  // Two statements at most under way: batches grow with the load, and one fills while the other runs.
  const batches = groupCommit<RefreshRequest>(commitBatch, options.translate, { inFlight: 2 });
  const refreshGrant = (request: RefreshRequest): Promise<RefreshResult> =>
    batches.transaction<RefreshResult | 'alone'>(request).then((outcome) => (outcome === 'alone' ? store.refreshGrant(request) : outcome));
  return { store: { ...store, refreshGrant }, flush: () => batches.flush() };
}
