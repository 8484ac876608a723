import { printable, printableJson } from '../cli-support.js';
import { unknownOptionError, usageError } from './errors.js';

/** Options every verb takes. */
export const COMMON_OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Where the server-side verbs keep their state; the client verbs have no such thing, so they refuse these. */
export const STORE_OPTIONS = {
  data: { type: 'string' },
  store: { type: 'string' },
} as const;

/**
 * Runs node:util parseArgs (passed in, so each verb keeps its precise types) with our error
 * wording. An unknown option is named alone: the verb's table of options says what was meant.
 */
export function parsed<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    const unknown = (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /'([^']+)'/.exec((error as Error).message)?.[1] : undefined;
    if (unknown) throw unknownOptionError(unknown);
    const message = error instanceof Error ? error.message.split(/\.( |$)/)[0]! : String(error);
    throw usageError(message);
  }
}

export function print(value: unknown): void {
  process.stdout.write(typeof value === 'string' ? `${value}\n` : `${printableJson(value, 2)}\n`);
}

/**
 * A plain aligned table for humans; `--json` prints the rows instead. Cells hold what others chose
 * (a provider's names, a client's): their control characters are shown as escapes, never sent to the terminal.
 */
export function table(cells: Record<string, string>[], columns: string[]): string {
  if (cells.length === 0) return '(none)';
  const rows = cells.map((row) => Object.fromEntries(Object.entries(row).map(([key, value]) => [key, printable(value)])));
  const widths = columns.map((column) => Math.max(column.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...rows.map((row) => line(columns.map((c) => row[c] ?? '')))].join('\n');
}

/** `text` as one word of a shell command line, for a command printed to be copied. */
export function shellQuoted(text: string): string {
  return /[\s'"$`\\]/.test(text) ? `'${text.replace(/'/g, `'\\''`)}'` : text;
}

export function isoTime(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
}
