/**
 * Rows ↔ records, from the schema: a record's fields become the named parameters of a statement
 * (encoded for the dialect), and a row read back becomes a fresh record (decoded), so callers may
 * mutate what they get.
 */
import type { Dialect } from './dialect.js';
import type { Column, Table } from './schema.js';

export interface Mapper<R> {
  /** The record as statement parameters, by column name. */
  params(record: R): Record<string, unknown>;
  record(row: Record<string, unknown>): R;
}

export function mapper<R>(d: Dialect, table: Table): Mapper<R> {
  const columns: Array<Column & { enc: (v: unknown) => unknown; dec: (v: unknown) => unknown }> = table.columns.map((c) => {
    const enc = d.encode[c.type];
    const dec = d.decode[c.type];
    const nullAs = c.nullAs;
    if (nullAs === undefined) return { ...c, enc, dec };
    return { ...c, enc: (v) => (v === null ? nullAs : enc(v)), dec: (v) => (v === nullAs ? null : dec(v)) };
  });
  return {
    params(record) {
      const out: Record<string, unknown> = {};
      const source = record as Record<string, unknown>;
      for (const c of columns) out[c.name] = c.enc(source[c.field] ?? null);
      return out;
    },
    record(row) {
      const out: Record<string, unknown> = {};
      for (const c of columns) out[c.field] = c.dec(row[c.name] ?? null);
      return out as R;
    },
  };
}
