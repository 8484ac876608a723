/**
 * The MCP request timeout of `call`. The SDK's own timer (60 s) also ran while the person was in
 * the browser signing in, since the sign-in happens inside the request's fetch, and cut off
 * anyone slower than a minute. This clock gives the server its time budget and stops while a
 * sign-in is under way; the sign-in has its own limit (the loopback's, 5 minutes by default).
 */
import { CliError } from './errors.js';

/** No timer of the SDK's own: the longest delay setTimeout takes. */
export const NO_SDK_TIMEOUT = 2_147_483_647;

export class RequestClock {
  private signingIn = 0;
  private readonly running = new Set<Deadline>();

  constructor(readonly budgetMs: number) {}

  /** For ContextClientOptions.onSignIn. */
  readonly onSignIn = (phase: 'started' | 'ended'): void => {
    const wasPaused = this.signingIn > 0;
    this.signingIn = Math.max(0, this.signingIn + (phase === 'started' ? 1 : -1));
    const paused = this.signingIn > 0;
    if (paused === wasPaused) return;
    for (const deadline of this.running) {
      if (paused) deadline.pause();
      else deadline.resume();
    }
  };

  /**
   * Runs one request with an abort signal that fires once the server has had `budgetMs` of time
   * outside sign-ins; a request cut off that way rejects with a CliError saying so.
   */
  async run<T>(what: string, request: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const deadline = new Deadline(this.budgetMs);
    this.running.add(deadline);
    if (this.signingIn === 0) deadline.resume();
    try {
      return await request(deadline.signal);
    } catch (error) {
      if (deadline.signal.aborted) throw new CliError(`${what}: no answer from the server within ${Math.round(this.budgetMs / 1000)} s`);
      throw error;
    } finally {
      deadline.pause();
      this.running.delete(deadline);
    }
  }
}

/** A time budget spent only while it runs. */
class Deadline {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private startedAt = 0;

  constructor(private remainingMs: number) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  resume(): void {
    if (this.timer || this.controller.signal.aborted) return;
    this.startedAt = Date.now();
    this.timer = setTimeout(() => this.controller.abort(), this.remainingMs);
  }

  pause(): void {
    if (!this.timer) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.remainingMs = Math.max(0, this.remainingMs - (Date.now() - this.startedAt));
  }
}
