/**
 * `fetch` for one context server: the access token on every request to the server's origin and
 * none anywhere else, never in the URL — as a bearer token, or for a DPoP-bound grant as
 * `Authorization: DPoP` with a fresh proof of the grant's key (RFC 9449 §7.1), sent again once
 * with the server's nonce when it asks for one (§9). One reaction to 401 (refresh, else
 * authorize again) and to 403 insufficient_scope (authorize again for the union of scopes), then
 * the request is repeated once.
 */
import { formatScope, parseScope } from '../core/scopes.js';
import { findBearerChallenge, findChallenge } from '../core/www-authenticate.js';
import { isDpopBound, isResourceNonceChallenge, type DpopProofs } from './dpop.js';
import type { StoredGrant } from './types.js';

/** What fetching asks of the session that holds the grant (ContextClient). */
export interface FetchSession {
  readonly serverUrl: string;
  /** A program's grant (client credentials, jwt-bearer), renewed without a person. */
  readonly unattended?: boolean;
  grant(): Promise<StoredGrant | undefined>;
  expiresSoon(grant: StoredGrant): boolean;
  refresh(grant: StoredGrant): Promise<StoredGrant>;
  /** A refresh, else (when a person may be asked) a new authorization. */
  refreshOrLogin(grant: StoredGrant): Promise<StoredGrant>;
  login(options: { scope?: string; wwwAuthenticate?: string | null }): Promise<StoredGrant>;
}

export interface AuthFetchOptions {
  /** What actually sends the requests. */
  fetch: typeof fetch;
  /** Proofs for DPoP-bound grants, and the nonces servers gave. */
  proofs: DpopProofs;
  /** False: never send a person to the browser for more scope. */
  interactive: boolean;
  onProgress: (message: string) => void;
}

export type AuthFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export function authorizedFetch(session: FetchSession, options: AuthFetchOptions): AuthFetch {
  const { proofs } = options;
  const authorized = (request: Request, grant: StoredGrant | undefined): Request => {
    const headers = new Headers(request.headers);
    if (isDpopBound(grant)) {
      headers.set('authorization', `DPoP ${grant.accessToken}`);
      headers.set('dpop', proofs.proof(grant.dpopKey, { method: request.method, url: request.url, accessToken: grant.accessToken }));
    } else if (grant) {
      headers.set('authorization', `Bearer ${grant.accessToken}`);
    }
    return new Request(request, { headers });
  };
  const send = async (request: Request, grant: StoredGrant | undefined): Promise<Response> => {
    if (!isDpopBound(grant)) return options.fetch(authorized(request, grant));
    const retry = request.clone();
    const response = await options.fetch(authorized(request, grant));
    proofs.remember(request.url, response);
    if (!isResourceNonceChallenge(response)) return response;
    // Once: the nonce it just gave is in the new proof; a second refusal is the answer.
    await response.body?.cancel();
    const second = await options.fetch(authorized(retry, grant));
    proofs.remember(request.url, second);
    return second;
  };

  return async (input, init) => {
    const request = new Request(input, init);
    if (new URL(request.url).origin !== new URL(session.serverUrl).origin) return options.fetch(request);
    const replay = request.clone();
    let grant = await session.grant();
    // Only the refresh is tried here: when it fails, the request goes without a token and its 401
    // starts the one new authorization below. (Authorizing here too sent the person to the
    // browser twice when that authorization failed and the 401 then authorized again.)
    // A program's renewal is a token request, not a person: when it fails, that failure is the
    // answer, since a second request after the 401 would be refused the same way.
    if (grant && session.expiresSoon(grant))
      grant = session.unattended ? await session.refreshOrLogin(grant) : await session.refresh(grant).catch(() => undefined);
    const response = await send(request, grant);

    const wwwAuthenticate = response.headers.get('www-authenticate');
    const challenge = isDpopBound(grant)
      ? (findChallenge(wwwAuthenticate, 'dpop') ?? findBearerChallenge(wwwAuthenticate))
      : (findBearerChallenge(wwwAuthenticate) ?? findChallenge(wwwAuthenticate, 'dpop'));
    // A nonce refused again after the one retry is the server's answer: the token is not at fault.
    if (response.status === 401 && challenge?.error !== 'use_dpop_nonce') {
      await response.body?.cancel();
      const renewed =
        grant && challenge?.error === 'invalid_token' && grant.refreshToken
          ? await session.refreshOrLogin({ ...grant, expiresAt: 0 })
          : await session.login({ wwwAuthenticate: response.headers.get('www-authenticate') });
      return send(replay, renewed);
    }
    // Step up only when the challenge asks for a scope we do not hold yet: a server that keeps
    // refusing the scopes it asked for must not send the person to the browser again and again.
    const held = parseScope(grant?.scope);
    const wanted = parseScope(challenge?.scope);
    const stepUp = wanted.length > 0 && wanted.some((scope) => !held.includes(scope));
    if (response.status === 403 && challenge?.error === 'insufficient_scope' && stepUp && options.interactive) {
      await response.body?.cancel();
      const scope = formatScope([...held, ...wanted]);
      options.onProgress(`The server needs more access (${challenge.scope ?? 'more scope'}); authorizing again`);
      return send(replay, await session.login({ scope }));
    }
    return response;
  };
}
