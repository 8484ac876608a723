import { ClientError } from '../client/index.js';
import { failureReason, isMissingPackage } from '../cli-support.js';
import { isStoreUnavailable } from '../store/index.js';

/** An error meant for the person at the terminal: one sentence, no stack trace, exit code 1 (2 for usage). */
export class CliError extends Error {
  /** For an option the verb's parser does not take: that option, as typed. */
  readonly unknownOption: string | undefined;

  constructor(
    message: string,
    readonly exitCode = 1,
    options?: { cause?: unknown; unknownOption?: string },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CliError';
    this.unknownOption = options?.unknownOption;
  }
}

/** A mistake in the command line: exit code 2; the report adds where the help of the verb is (describeFailure). */
export function usageError(message: string): CliError {
  return new CliError(message, 2);
}

/** An option the verb's parser does not take: a usage error that the verb's table of options completes with what was meant (commands.ts). */
export function unknownOptionError(option: string): CliError {
  return new CliError(`unknown option ${option}`, 2, { unknownOption: option });
}

/**
 * Edits from `a` to `b`: insertions, deletions, substitutions, and swaps of two neighbours
 * counted as one (`--prot` is one edit from `--port`), the mistake typing makes most.
 */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * What someone who typed `typed` probably meant among `known`: the names it begins (a name cut
 * short), else the nearest within one edit for a short word and two for a longer one; at most three.
 */
export function nearest(typed: string, known: readonly string[]): string[] {
  const word = typed.toLowerCase();
  if (word.length >= 2) {
    const begun = known.filter((name) => name.startsWith(word) && name !== word);
    if (begun.length > 0) return begun.slice(0, 3);
  }
  const limit = word.length <= 4 ? 1 : 2;
  const scored = known.map((name) => ({ name, distance: editDistance(word, name) })).filter((c) => c.distance <= limit);
  const best = Math.min(...scored.map((c) => c.distance));
  return scored
    .filter((c) => c.distance === best)
    .slice(0, 3)
    .map((c) => c.name);
}

/** `; did you mean X?` (or `X or Y`) for what `typed` probably meant, or nothing. */
export function didYouMean(typed: string, known: readonly string[], prefix = ''): string {
  const names = nearest(typed, known).map((name) => `${prefix}${name}`);
  if (names.length === 0) return '';
  return `; did you mean ${names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`}?`;
}

/** What a failed command reports: a stable code for scripts (`--json`), a sentence, an exit code. */
export interface Failure {
  error: string;
  message: string;
  exitCode: number;
  /** Not ours to explain: a bug. */
  unexpected: boolean;
}

/** The failure as reported; a usage error says where the help is: `verb`'s when the mistake was made in one. */
export function describeFailure(error: unknown, verb?: string): Failure {
  if (error instanceof CliError) {
    if (error.exitCode !== 2) return { error: 'failed', message: error.message, exitCode: error.exitCode, unexpected: false };
    return { error: 'usage', message: `${error.message} (see 'context-auth ${verb ? `${verb} ` : ''}--help')`, exitCode: 2, unexpected: false };
  }
  if (error instanceof ClientError) return { error: error.code, message: error.message, exitCode: 1, unexpected: false };
  // An optional feature used without its package: the sentence names the package to install.
  if (isMissingPackage(error)) return { error: 'missing_package', message: innermost(error).message, exitCode: 1, unexpected: false };
  if (isStoreUnavailable(error))
    return { error: 'store_unavailable', message: `the database is unavailable: ${error.message}`, exitCode: 1, unexpected: false };
  return { error: 'unexpected', message: `unexpected error: ${failureReason(error)}`, exitCode: 1, unexpected: true };
}

/** The innermost error of a cause chain that is still ours to show: the missing package's own sentence. */
function innermost(error: unknown): Error {
  let found = error as Error;
  for (let at: unknown = error; at instanceof Error; at = at.cause) if (isMissingPackage(at)) found = at;
  return found;
}
