/**
 * The real differences between SQLite and PostgreSQL, as data: column types, how parameters are
 * written, how values are encoded, byte-order collation, the insertion-order column, how tables
 * are clustered and rekeyed, merging two JSON arrays and reading one's strings, row locks, writes
 * inside WITH, announcing commits to other processes, and the advisory lock that serialises
 * signing-key changes across replicas. Everything else (statements, schema, store logic) is
 * written once, and never asks which database it runs on: only `name` tells them apart, for
 * caches and messages.
 */
import type { Column, ColumnType, Index, Table } from './schema.js';

export interface Dialect {
  name: 'sqlite' | 'postgres';
  /** Column type names. */
  types: Record<ColumnType, string>;
  /** After CREATE TABLE (…): SQLite's STRICT typing. */
  tableSuffix: string;
  /**
   * `:name` in a statement becomes `?` (SQLite: one value per occurrence, bound by position, the
   * fastest way into better-sqlite3) or `$n` (PostgreSQL: one value per name).
   */
  placeholders: 'each' | 'numbered';
  /** Values as the driver takes and gives them. */
  encode: Record<ColumnType, (value: unknown) => unknown>;
  decode: Record<ColumnType, (value: unknown) => unknown>;
  /** Appended to a text column in ORDER BY: byte order, whatever the database's locale. */
  binary: string;
  /** The column that orders rows of an `insertionOrder` table by insertion. */
  insertionOrder: string;
  /** That column's DDL where a table must be given one (PostgreSQL), or null where every table has it (SQLite's rowid). */
  insertionOrderColumn: string | null;
  /**
   * The column that numbers a table's rows in the order they are stored, walked by sweeps of the
   * tables that have no key in that order (SQLite's rowid), or null where there is none.
   */
  storageOrder: string | null;
  /** After a table's DDL, for a table clustered on its primary key (SQLite's WITHOUT ROWID), or null where tables are heaps. */
  clustered: string | null;
  /** Whether a bool column, an integer, is checked to be 0 or 1 (SQLite, which has no boolean type). */
  checksBool: boolean;
  /**
   * Whether a primary key is changed in place (ALTER TABLE, PostgreSQL). SQLite cannot: the table
   * is rebuilt with its new key, as it is to cluster it.
   */
  altersPrimaryKey: boolean;
  /** A JSON array holding the distinct values of two JSON arrays, sorted. */
  mergeJsonArrays: (a: string, b: string) => string;
  /** The strings of a JSON array (a parameter encoded as `json`), as the rows of a subquery: `x IN (…)`. */
  textsOf: (array: string) => string;
  /** Serialises signing-key changes across processes within a transaction, or null where the transaction already does. */
  keyLock: string | null;
  /** The smaller and the larger of two values (SQLite's two-argument min and max). */
  least: string;
  greatest: string;
  /** After a SELECT, `{forShare}`: a row lock that waits for (and then re-reads) a concurrent update; '' where writes are serialised anyway. */
  forShare: string;
  /** After a SELECT, `{forUpdate}`: the row locked for the transaction's update; '' where writes are serialised anyway. */
  forUpdate: string;
  /**
   * Whether a WITH may hold INSERT, UPDATE and DELETE (PostgreSQL): a refresh, or its retry, is
   * then one statement (one round trip, one snapshot); otherwise a program of several in one
   * transaction whose writes are serialised (SQLite's IMMEDIATE transaction).
   */
  writesInWith: boolean;
  /** Tells other processes, on commit, that a revocation was recorded; null where they poll instead. */
  notifyRevocation: string | null;
  /**
   * A write that also tells other processes, on commit and only if it wrote a row, on `channel`
   * (still counting the rows it wrote); null where no process listens (SQLite).
   */
  announced: ((write: string, channel: string) => string) | null;
  /**
   * Lets the current transaction commit without waiting for its log to reach the disk, or null.
   * For sweep batches: a batch lost in a crash is deleted again by the next sweep, and requests'
   * commits no longer queue behind the sweep's syncs.
   */
  noSyncCommit: string | null;
}

/** The PostgreSQL channel revocations are announced on (store/postgres.ts listens). */
export const REVOCATION_CHANNEL = 'context_auth_revocations';

/** The PostgreSQL channel every write of the clients table is announced on, for the processes that cache clients. */
export const CLIENT_CHANNEL = 'context_auth_clients';

/** The codec of a value that goes in and comes out as it is (mapping.ts skips calling it). */
export const same = (value: unknown): unknown => value;
const json = (value: unknown): string => JSON.stringify(value);

/** Advisory lock key that serialises signing key changes across replicas. */
export const SIGNING_KEY_LOCK = 7_016_336_241_620_180_002n;

export const sqlite: Dialect = {
  name: 'sqlite',
  types: { text: 'TEXT', int: 'INTEGER', bool: 'INTEGER', json: 'TEXT' },
  tableSuffix: ' STRICT',
  placeholders: 'each',
  encode: { text: same, int: same, bool: (v) => (v === null ? null : v ? 1 : 0), json: (v) => (v === null ? null : json(v)) },
  decode: { text: same, int: same, bool: (v) => (v === null ? null : v === 1), json: (v) => (v === null ? null : JSON.parse(v as string)) },
  binary: '',
  insertionOrder: 'rowid',
  insertionOrderColumn: null,
  storageOrder: 'rowid',
  clustered: ', WITHOUT ROWID',
  checksBool: true,
  altersPrimaryKey: false,
  mergeJsonArrays: (a, b) => `(SELECT json_group_array(value ORDER BY value) FROM (SELECT value FROM json_each(${a}) UNION SELECT value FROM json_each(${b})))`,
  textsOf: (array) => `SELECT value FROM json_each(${array})`,
  // better-sqlite3 runs IMMEDIATE transactions: the write lock is taken at BEGIN.
  keyLock: null,
  least: 'min',
  greatest: 'max',
  forShare: '',
  forUpdate: '',
  // A WITH holds SELECTs only.
  writesInWith: false,
  notifyRevocation: null,
  announced: null,
  // synchronous = NORMAL in WAL mode: commits do not sync already.
  noSyncCommit: null,
};

export const postgres: Dialect = {
  name: 'postgres',
  types: { text: 'text', int: 'bigint', bool: 'boolean', json: 'jsonb' },
  tableSuffix: '',
  placeholders: 'numbered',
  // jsonb goes in as JSON text: node-postgres would turn a JS array into a PostgreSQL array
  // literal. It comes out parsed, bigint as a number (the pool's type parser), boolean as boolean.
  encode: { text: same, int: same, bool: same, json: (v) => (v === null ? null : json(v)) },
  decode: { text: same, int: same, bool: same, json: same },
  binary: ' COLLATE "C"',
  insertionOrder: 'seq',
  insertionOrderColumn: 'seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE',
  storageOrder: null,
  clustered: null,
  checksBool: false,
  altersPrimaryKey: true,
  // Scope values are ASCII (RFC 6749 §3.3), where byte order is JS's default sort order.
  mergeJsonArrays: (a, b) =>
    `(SELECT coalesce(jsonb_agg(value ORDER BY value COLLATE "C"), '[]'::jsonb) FROM (SELECT DISTINCT jsonb_array_elements_text(${a} || ${b}) AS value) AS merged)`,
  textsOf: (array) => `SELECT jsonb_array_elements_text(CAST(${array} AS jsonb))`,
  keyLock: `SELECT pg_advisory_xact_lock(${SIGNING_KEY_LOCK})`,
  least: 'least',
  greatest: 'greatest',
  forShare: ' FOR SHARE',
  forUpdate: ' FOR UPDATE',
  writesInWith: true,
  notifyRevocation: `SELECT pg_notify('${REVOCATION_CHANNEL}', '')`,
  announced: (write, channel) => `WITH written AS (${write} RETURNING 1) SELECT pg_notify('${channel}', '') FROM written`,
  noSyncCommit: 'SET LOCAL synchronous_commit = off',
};

// ---------------------------------------------------------------------------------------------
// DDL

function columnDdl(d: Dialect, c: Column, primaryKey: string[]): string {
  const parts = [c.name, d.types[c.type]];
  if (primaryKey.length === 1 && primaryKey[0] === c.name) parts.push('PRIMARY KEY');
  else if (!c.nullable) parts.push('NOT NULL');
  if (c.unique) parts.push('UNIQUE');
  if (c.type === 'bool' && d.checksBool) parts.push(`CHECK (${c.name} IN (0, 1))`);
  if (c.oneOf) parts.push(`CHECK (${c.name} IN (${c.oneOf.map((v) => `'${v}'`).join(', ')}))`);
  if (c.references) parts.push(`REFERENCES ${c.references.table} (${c.references.column}) ON DELETE CASCADE`);
  return parts.join(' ');
}

function indexDdl(table: Table, index: Index): string {
  const where = index.where ? ` WHERE ${index.where}` : '';
  return `CREATE ${index.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS ${index.name} ON ${table.name} (${index.columns.join(', ')})${where}`;
}

/** Whether column `c` exists at `version`. */
const existsAt = (c: Column, version: number): boolean => c.since <= version && (c.until === undefined || version < c.until);

/** The primary key of `table` at `version`. */
const primaryKeyAt = (table: Table, version: number): string[] =>
  table.formerPrimaryKey && version < table.formerPrimaryKey.until ? table.formerPrimaryKey.columns : table.primaryKey;

/** Whether `table` is clustered (SQLite's WITHOUT ROWID) at `version`. */
const clusteredAt = (table: Table, version: number): boolean => Boolean(table.clustered) && (table.clusteredSince ?? table.since) <= version;

function createTable(d: Dialect, table: Table, name: string, columns: Column[], version: number): string {
  const key = primaryKeyAt(table, version);
  const lines = columns.filter((c) => existsAt(c, version)).map((c) => columnDdl(d, c, key));
  if (table.insertionOrder && d.insertionOrderColumn) lines.unshift(d.insertionOrderColumn);
  if (key.length > 1) lines.push(`PRIMARY KEY (${key.join(', ')})`);
  const suffix = clusteredAt(table, version) && d.clustered ? `${d.tableSuffix}${d.clustered}` : d.tableSuffix;
  return `CREATE TABLE ${name} (\n  ${lines.join(',\n  ')}\n)${suffix}`;
}

/**
 * SQLite cannot make a table WITHOUT ROWID, or change its primary key, in place: a copy is made
 * so, filled, put in its place, and given back its indexes (dropped with the old table). Nothing
 * references these tables.
 */
function rebuild(d: Dialect, table: Table, columns: Column[], version: number): string[] {
  const copy = `${table.name}_rebuilt`;
  const names = columns
    .filter((c) => existsAt(c, version))
    .map((c) => c.name)
    .join(', ');
  return [
    createTable(d, table, copy, columns, version),
    `INSERT INTO ${copy} (${names}) SELECT ${names} FROM ${table.name}`,
    `DROP TABLE ${table.name}`,
    `ALTER TABLE ${copy} RENAME TO ${table.name}`,
    ...table.indexes.filter((i) => i.since < version && (i.until === undefined || version < i.until)).map((i) => indexDdl(table, i)),
  ];
}

/**
 * The statements of migration `version`: new tables, new columns, new indexes and the indexes it
 * drops; then the data it moves; then the columns it drops.
 */
export function migrationDdl(d: Dialect, tables: readonly Table[], version: number): string[] {
  const statements: string[] = [];
  const drops: string[] = [];
  const backfills: string[] = [];
  for (const table of tables) {
    const columns = [...table.columns, ...(table.retired ?? [])];
    if (table.since === version) {
      statements.push(createTable(d, table, table.name, columns, version));
    } else if (table.since < version) {
      for (const c of columns.filter((column) => column.since === version)) {
        statements.push(`ALTER TABLE ${table.name} ADD COLUMN ${columnDdl(d, c, primaryKeyAt(table, version))}`);
      }
      const rekeyed = table.formerPrimaryKey?.until === version;
      if (((table.clusteredSince === version && d.clustered) || rekeyed) && !d.altersPrimaryKey) statements.push(...rebuild(d, table, columns, version));
      if (rekeyed && d.altersPrimaryKey) {
        statements.push(`ALTER TABLE ${table.name} DROP CONSTRAINT ${table.name}_pkey, ADD PRIMARY KEY (${table.primaryKey.join(', ')})`);
      }
    }
    for (const index of table.indexes.filter((i) => i.since === version && table.since <= version)) statements.push(indexDdl(table, index));
    for (const index of table.indexes.filter((i) => i.until === version)) statements.push(`DROP INDEX IF EXISTS ${index.name}`);
    for (const backfill of (table.backfill ?? []).filter((b) => b.since === version)) backfills.push(...backfill.statements);
    for (const c of columns.filter((column) => column.until === version && table.since < version))
      drops.push(`ALTER TABLE ${table.name} DROP COLUMN ${c.name}`);
    if (table.until === version) drops.push(`DROP TABLE ${table.name}`);
  }
  return [...statements, ...backfills, ...drops];
}

// ---------------------------------------------------------------------------------------------
// Statements

/**
 * A statement written once: SQL with `:name` parameters, `{binary}`, `{order}`, `{forShare}` and `{forUpdate}` where the
 * dialects differ, or a function of the dialect for the rest. `null` means nothing to run.
 */
export interface Statement {
  readonly name: string;
  readonly text: string | ((d: Dialect) => string | null);
}

export interface Rendered {
  sql: string;
  /** The parameter bound at each position. */
  names: string[];
}

const rendered = new WeakMap<Statement, Map<string, Rendered | null>>();

/** The statement in this dialect (computed once and kept). */
export function render(d: Dialect, statement: Statement): Rendered | null {
  let byDialect = rendered.get(statement);
  if (!byDialect) rendered.set(statement, (byDialect = new Map()));
  if (byDialect.has(d.name)) return byDialect.get(d.name)!;
  const text = typeof statement.text === 'function' ? statement.text(d) : statement.text;
  let result: Rendered | null = null;
  if (text !== null) {
    const names: string[] = [];
    const sql = text
      .replace(/\{binary\}/g, d.binary)
      .replace(/\{order\}/g, d.insertionOrder)
      .replace(/\{forShare\}/g, d.forShare)
      .replace(/\{forUpdate\}/g, d.forUpdate)
      // `::type` casts are PostgreSQL syntax, never parameters.
      .replace(/(?<![:\w]):([a-z_]+)/g, (_, name: string) => {
        if (d.placeholders === 'each') {
          names.push(name);
          return '?';
        }
        let position = names.indexOf(name);
        if (position < 0) position = names.push(name) - 1;
        return `$${position + 1}`;
      });
    result = { sql, names };
  }
  byDialect.set(d.name, result);
  return result;
}
