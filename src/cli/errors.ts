import { ClientError, failureReason } from '../client/index.js';
import { StoreUnavailableError } from '../store/index.js';

/** An error meant for the person at the terminal: one sentence, no stack trace, exit code 1 (2 for usage). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'CliError';
  }
}

export function usageError(message: string): CliError {
  return new CliError(`${message} (see 'context-auth --help')`, 2);
}

/** What a failed command reports: a stable code for scripts (`--json`), a sentence, an exit code. */
export interface Failure {
  error: string;
  message: string;
  exitCode: number;
  /** Not ours to explain: a bug. */
  unexpected: boolean;
}

export function describeFailure(error: unknown): Failure {
  if (error instanceof CliError) return { error: error.exitCode === 2 ? 'usage' : 'failed', message: error.message, exitCode: error.exitCode, unexpected: false };
  if (error instanceof ClientError) return { error: error.code, message: error.message, exitCode: 1, unexpected: false };
  if (error instanceof StoreUnavailableError) return { error: 'store_unavailable', message: `the database is unavailable: ${error.message}`, exitCode: 1, unexpected: false };
  return { error: 'unexpected', message: `unexpected error: ${failureReason(error)}`, exitCode: 1, unexpected: true };
}
