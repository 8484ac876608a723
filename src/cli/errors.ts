/** An error meant for the person at the terminal: one sentence, no stack trace, exit code 1 (2 for usage). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export function usageError(message: string): CliError {
  return new CliError(`${message} (see 'context-auth --help')`, 2);
}
