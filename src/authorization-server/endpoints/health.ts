import type { SigningKeys } from '../keys.js';
import type { BaseServices } from '../services.js';
import { json, type Answer } from '../http/responses.js';

/** How long /readyz waits for the store before calling it unreachable, and for each report: a probe must answer in time. */
const STORE_CHECK_MS = 2_000;

/** GET /healthz: the process is serving requests. Nothing else is asked, so a slow store never restarts a healthy process. */
export function healthzEndpoint(): Answer {
  return json({ status: 'ok' });
}

/**
 * GET /readyz: whether this process can answer token requests now: the store answers (one cheap
 * call, reading the signing keys; a store is migrated when it is opened) and a signing key is
 * loaded (made on a new store, as the first token would). 503 names what is not ready, never why in the store's words (a message may carry a host
 * or a user name).
 */
export async function readyzEndpoint(
  ctx: Pick<BaseServices, 'store'> & { keys: SigningKeys },
  reports: Record<string, () => Promise<Record<string, string>>>,
): Promise<Answer> {
  // What is served beside the server (the readinessReports option) is reported, never checked.
  const reported = Promise.all(
    Object.entries(reports).map(async ([name, report]) => [name, await withTimeout(report(), STORE_CHECK_MS).catch(() => 'unknown')] as const),
  );
  const checks: Record<string, string> = {};
  checks.store = await withTimeout(ctx.store.listSigningKeys(), STORE_CHECK_MS).then(
    () => 'ok',
    () => 'unreachable',
  );
  // From the cache when fresh; else read (made, on a new store) the way the first token would.
  checks.signing_key =
    checks.store !== 'ok'
      ? 'unknown'
      : await ctx.keys.current().then(
          () => 'ok',
          () => 'not loaded',
        );
  const ready = Object.values(checks).every((check) => check === 'ok');
  return json({ status: ready ? 'ready' : 'not_ready', checks, ...Object.fromEntries(await reported) }, ready ? 200 : 503);
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timed out')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
