/**
 * The revocation list remote resource servers poll (POST /revocations): what was revoked since
 * their cursor, as the claims to refuse (`grant_id` or `jti`) and until when (`exp`). A resource
 * server that polls every N seconds refuses a revoked token within N seconds plus one round trip,
 * without a call per request. Not a standard: our own small protocol, documented in docs/revocation.md.
 */
import { OAuthError } from '../core/errors.js';
import { GRANT_ID_CLAIM } from '../core/revocation-set.js';
import type { RevocationFeedStore } from '../store/store.js';
import { CURSOR_OVERLAP_SECONDS } from './revocations.js';

export const REVOCATION_LIST_PATH = '/revocations';

export interface RevocationListEntry {
  grant_id?: string;
  jti?: string;
  /** Seconds since the epoch after which every token the entry names has expired. */
  exp: number;
}

export interface RevocationList {
  revocations: RevocationListEntry[];
  /** Opaque to the caller: sent back as `cursor` on the next poll. */
  cursor: string;
}

/** The entries revoked since `cursor` (all that still matter, without one), and the next cursor. */
export async function revocationList(store: RevocationFeedStore, cursor: string | undefined, now: number): Promise<RevocationList> {
  let from = 0;
  if (cursor !== undefined) {
    if (!/^\d{1,15}$/.test(cursor)) throw new OAuthError('invalid_request', 'cursor must be the value a previous answer gave');
    from = Number(cursor);
  }
  // Entries near the cursor come again (a late commit is not missed); the caller's set ignores repeats.
  const rows = await store.listRevocations(Math.max(0, from - CURSOR_OVERLAP_SECONDS), now);
  let next = from;
  const revocations = rows.map((row): RevocationListEntry => {
    if (row.revokedAt > next) next = row.revokedAt;
    return row.kind === 'grant' ? { [GRANT_ID_CLAIM]: row.id, exp: row.expiresAt } : { jti: row.id, exp: row.expiresAt };
  });
  return { revocations, cursor: String(next) };
}
