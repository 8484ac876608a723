/**
 * Learning of revocations from a remote authorization server without a call per request: poll
 * its revocation list (POST /revocations, our own small protocol) every few seconds with a
 * cursor, and keep what it names in memory (core/revocation-set.ts) until the tokens expire.
 * A revoked token is refused at most `intervalSeconds` (plus a round trip) after its revocation.
 */
import { RevocationSet } from '../core/revocation-set.js';
import type { RevocationCheck, VerifiedToken } from './types.js';

export interface RevocationFeedOptions {
  /** The authorization server's revocation list: `<issuer>/revocations` for context-auth. */
  url: string;
  /** A confidential client an operator allowed to introspect (`context-auth clients add --introspect`). */
  clientId: string;
  clientSecret: string;
  /** Seconds between polls: the bound on how late a revocation takes effect here. Default 5. */
  intervalSeconds?: number;
  /** Told of each failed poll (the set keeps what it had; the next poll tries again). */
  onError?: (error: Error) => void;
  fetch?: typeof fetch;
  now?: () => number;
}

export interface RevocationFeed extends RevocationCheck {
  /** Polls once (resolving when the list is read, rejecting when it cannot be), then every `intervalSeconds`. */
  start(): Promise<void>;
  stop(): void;
  /** One poll now. */
  sync(): Promise<void>;
  /** When the last poll succeeded (seconds since the epoch), to alert on a feed gone quiet. */
  readonly lastSuccessAt: number | undefined;
}

interface ListAnswer {
  revocations: Array<{ grant_id?: unknown; jti?: unknown; exp?: unknown }>;
  cursor: string;
}

function isListAnswer(value: unknown): value is ListAnswer {
  const v = value as Partial<ListAnswer> | null;
  return typeof v === 'object' && v !== null && Array.isArray(v.revocations) && typeof v.cursor === 'string';
}

const formEncode = (value: string): string => encodeURIComponent(value).replace(/%20/g, '+');

export function revocationFeed(options: RevocationFeedOptions): RevocationFeed {
  const fetchImpl = options.fetch ?? fetch;
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));
  const intervalMs = (options.intervalSeconds ?? 5) * 1000;
  if (!(intervalMs > 0)) throw new Error('intervalSeconds must be positive');
  const authorization = `Basic ${Buffer.from(`${formEncode(options.clientId)}:${formEncode(options.clientSecret)}`).toString('base64')}`;
  // Kept past exp by the JWT verifiers' default clock tolerance and more.
  const set = new RevocationSet(60);
  let cursor: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  let lastSuccessAt: number | undefined;

  async function poll(): Promise<void> {
    const body = new URLSearchParams(cursor === undefined ? {} : { cursor });
    const response = await fetchImpl(options.url, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) throw new Error(`the revocation list answered ${response.status}`);
    const answer: unknown = await response.json();
    if (!isListAnswer(answer)) throw new Error('the revocation list answered something else than a list');
    for (const entry of answer.revocations) {
      if (typeof entry.exp !== 'number') continue;
      if (typeof entry.grant_id === 'string') set.add({ kind: 'grant', id: entry.grant_id, expiresAt: entry.exp });
      else if (typeof entry.jti === 'string') set.add({ kind: 'token', id: entry.jti, expiresAt: entry.exp });
    }
    cursor = answer.cursor;
    lastSuccessAt = now();
    set.prune(lastSuccessAt);
  }

  const sync = (): Promise<void> => {
    inFlight ??= poll().finally(() => (inFlight = undefined));
    return inFlight;
  };

  return {
    isRevoked: (token: VerifiedToken) => set.isRevoked(token.claims),
    sync,
    async start() {
      if (timer) return;
      await sync();
      timer = setInterval(() => {
        sync().catch((error: unknown) => options.onError?.(error instanceof Error ? error : new Error(String(error))));
      }, intervalMs);
      timer.unref();
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
    },
    get lastSuccessAt() {
      return lastSuccessAt;
    },
  };
}
