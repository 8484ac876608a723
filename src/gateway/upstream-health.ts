/**
 * What /readyz reports of each gateway path's upstream. It is reported, never checked: a replica
 * whose one upstream is down still serves the other paths and its authorization server, so a
 * load balancer must not take it out of service for that.
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { delimiter, join, resolve } from 'node:path';
import type { Forwarded } from './forward.js';

/**
 * `ok`: an HTTP upstream answered (whatever its status), a stdio command can be run. Else why
 * not: `unreachable`, `timeout` (no answer in time), `refused` (it answered the gateway 401 or
 * with a redirect), `not_found`, `not_executable`.
 */
export type UpstreamHealth = 'ok' | 'unreachable' | 'timeout' | 'refused' | 'not_found' | 'not_executable';

/** How long what a forward or a probe found is taken as the upstream's state. */
const FRESH_MS = 10_000;
/** How long a probe waits for an answer: less than the 2 s /readyz gives a report. */
const PROBE_TIMEOUT_MS = 1_500;

/**
 * An HTTP upstream's state: what the last forward found, while it is fresh, else a probe. The
 * forwards come first because they cost nothing and say more (a probe carries no token, so it
 * cannot tell an upstream that refuses the gateway's). The probe covers an upstream nobody called
 * lately, which is when an operator asks: a HEAD, whose any answer shows the upstream is there,
 * and whose result is kept as long as a forward's, so probes that come often cost one request.
 */
export class HttpUpstreamHealth {
  private last: { health: UpstreamHealth; atMs: number } | undefined;
  private probing: Promise<UpstreamHealth> | undefined;

  constructor(
    private readonly url: URL,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** What a forward found; a client gone says nothing of the upstream. */
  forwarded(outcome: Forwarded['outcome']): void {
    if (outcome.kind === 'answered') this.note('ok');
    else if (outcome.failure !== 'cancelled') this.note(outcome.failure);
  }

  async state(): Promise<UpstreamHealth> {
    if (this.last && this.nowMs() - this.last.atMs < FRESH_MS) return this.last.health;
    this.probing ??= this.probe().finally(() => (this.probing = undefined));
    return this.probing;
  }

  private note(health: UpstreamHealth): void {
    this.last = { health, atMs: this.nowMs() };
  }

  private async probe(): Promise<UpstreamHealth> {
    let health: UpstreamHealth;
    try {
      const answer = await fetch(this.url, { method: 'HEAD', redirect: 'manual', signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
      await answer.body?.cancel().catch(() => {});
      health = 'ok';
    } catch (error) {
      health = (error as Error).name === 'TimeoutError' ? 'timeout' : 'unreachable';
    }
    this.note(health);
    return health;
  }
}

/**
 * Whether a stdio upstream's command can be run, as spawn would find it: a path (anything with a
 * slash) as it is, a bare name in each folder of `searchPath` (the PATH the process gets).
 */
export async function commandHealth(command: string, searchPath: string | undefined): Promise<UpstreamHealth> {
  const candidates = command.includes('/')
    ? [resolve(command)]
    : (searchPath ?? '').split(delimiter).flatMap((folder) => (folder === '' ? [] : [join(folder, command)]));
  let found = false;
  for (const file of candidates) {
    try {
      if (!(await stat(file)).isFile()) continue;
    } catch {
      continue;
    }
    found = true;
    try {
      await access(file, constants.X_OK);
      return 'ok';
    } catch {
      // Another folder further on may hold one that can be run.
    }
  }
  return found ? 'not_executable' : 'not_found';
}
