/**
 * Revocation at logout (RFC 7009): a grant's refresh token, whose revocation ends the whole grant
 * at a server that follows §2.1 (as ours does), else its access token. What the authorization
 * server answered is reported as it is, and nothing more is claimed.
 */
import * as oauth from 'oauth4webapi';
import { requestOptions, serverSaid, withBodyError } from './oauth-requests.js';
import { failureReason } from './network-errors.js';
import type { StoredGrant } from './types.js';

/** What logout did with one stored grant, which is forgotten whatever the outcome. */
export interface Revocation {
  issuer: string;
  clientId: string;
  /** The token sent (or that would have been): the refresh token when the grant has one, else the access token. */
  token: 'refresh_token' | 'access_token';
  /**
   * - `revoked`: the authorization server answered 200: the token is revoked, or was no longer
   *   valid there (RFC 7009 §2.2 answers both alike).
   * - `not_offered`: its metadata names no revocation endpoint; nothing was sent.
   * - `not_sent`: the context server no longer lists that authorization server, so the token was
   *   sent nowhere (`reason`).
   * - `failed`: the request failed or was refused (`reason`: the server's OAuth error, or why it
   *   could not be asked).
   */
  outcome: 'revoked' | 'not_offered' | 'not_sent' | 'failed';
  reason?: string;
  /** When the access token expires (seconds since the epoch), when the server said. */
  accessTokenExpiresAt?: number;
}

export type RevocationBase = Omit<Revocation, 'outcome' | 'reason'>;

/** The parts of a Revocation every outcome shares. */
export function revocationOf(grant: StoredGrant): RevocationBase {
  return {
    issuer: grant.issuer,
    clientId: grant.clientId,
    token: grant.refreshToken ? 'refresh_token' : 'access_token',
    ...(grant.expiresAt === undefined ? {} : { accessTokenExpiresAt: grant.expiresAt }),
  };
}

/** Asks `as` to revoke the grant's token, authenticated as `client` by `auth`; never throws. */
export async function revokeAt(
  as: oauth.AuthorizationServer,
  client: oauth.Client,
  auth: oauth.ClientAuth,
  grant: StoredGrant,
  fetchImpl: typeof fetch,
): Promise<Revocation> {
  const base = revocationOf(grant);
  const endpoint = as.revocation_endpoint;
  if (!endpoint) return { ...base, outcome: 'not_offered' };
  const token = base.token === 'refresh_token' ? grant.refreshToken! : grant.accessToken;
  try {
    const response = await oauth.revocationRequest(as, client, auth, token, requestOptions(fetchImpl, endpoint, { token_type_hint: base.token }));
    await oauth.processRevocationResponse(await withBodyError(response));
    return { ...base, outcome: 'revoked' };
  } catch (error) {
    return { ...base, outcome: 'failed', reason: serverSaid(error) ?? failureReason(error, endpoint) };
  }
}
