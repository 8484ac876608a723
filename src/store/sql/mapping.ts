/**
 * Rows ↔ records, from the schema: a record's fields become the named parameters of a statement
 * (encoded for the dialect), and a row read back becomes a fresh record (decoded), so callers may
 * mutate what they get.
 */
import { same, type Dialect } from './dialect.js';
import type { Column, Table } from './schema.js';

export interface Mapper<R> {
  /** The record as statement parameters, by column name. */
  params(record: R): Record<string, unknown>;
  record(row: Record<string, unknown>): R;
}

export function mapper<R>(d: Dialect, table: Table): Mapper<R> {
  // Per column: its names and the codecs it needs (null where the value passes as it is: most
  // columns, and this runs for every row of every query).
  const columns = table.columns.map((c: Column) => {
    let enc = d.encode[c.type] === same ? null : d.encode[c.type];
    let dec = d.decode[c.type] === same ? null : d.decode[c.type];
    const nullAs = c.nullAs;
    if (nullAs !== undefined) {
      const [e, de] = [enc, dec];
      enc = (v) => (v === null ? nullAs : e ? e(v) : v);
      dec = (v) => (v === nullAs ? null : de ? de(v) : v);
    }
    return { name: c.name, field: c.field, enc, dec };
  });
  return {
    params(record) {
      const out: Record<string, unknown> = {};
      const source = record as Record<string, unknown>;
      for (const c of columns) {
        const value = source[c.field] ?? null;
        out[c.name] = c.enc ? c.enc(value) : value;
      }
      return out;
    },
    record(row) {
      const out: Record<string, unknown> = {};
      for (const c of columns) {
        const value = row[c.name] ?? null;
        out[c.field] = c.dec ? c.dec(value) : value;
      }
      return out as R;
    },
  };
}
