/**
 * A grant with a live refresh token, issued as a code's redemption issues it (the store's one way
 * to issue a family's first refresh token): the grant saved with a code, then the code redeemed.
 */
import { hashSecret, randomToken } from '../src/core/index.js';
import type { GrantRecord, Store } from '../src/store/index.js';

export async function grantWithRefreshToken(
  store: Store,
  grant: GrantRecord,
  refreshToken: { tokenHash: string; createdAt: number; expiresAt: number },
  accessExpiresAt: number,
): Promise<void> {
  const now = grant.createdAt;
  const codeHash = hashSecret(randomToken(32));
  await store.createGrant(grant, {
    codeHash,
    grantId: grant.id,
    clientId: grant.clientId,
    userId: grant.userId ?? '',
    redirectUri: 'http://127.0.0.1:9/cb',
    redirectUriProvided: true,
    codeChallenge: '',
    scope: grant.scope,
    resource: grant.resource,
    authTime: grant.authTime ?? now,
    nonce: null,
    createdAt: now,
    expiresAt: now + 60,
    consumedAt: null,
  });
  const issued = { ...refreshToken, grantId: grant.id, clientId: grant.clientId, scope: grant.scope };
  const redeemed = await store.redeemAuthorizationCode(codeHash, now, () => ({ accessExpiresAt, refreshToken: issued }));
  if (redeemed.status !== 'ok') throw new Error(`seeding grant ${grant.id}: ${redeemed.status}`);
}
