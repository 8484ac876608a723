/**
 * A delegated token (RFC 8693 §1.1, delegation): the server of resource A, holding a person's
 * access token for A, asks for a token for resource B to call B on the person's behalf. The new
 * token names the person as `sub` and the caller in `act` (with the subject token's own actors
 * nested inside, for a chain), carries no more than the subject token's scopes and the policy's,
 * and ends no later than the subject token. It names the subject token's grant, so revoking the
 * person's grant refuses every token delegated from it too.
 */
import { OAuthError } from '../../core/errors.js';
import { GRANT_ID_CLAIM } from '../../core/revocation-set.js';
import { formatScope, parseScope } from '../../core/scopes.js';
import { TOKEN_EXCHANGE_GRANT_TYPE } from '../../core/id-jag.js';
import { ACCESS_TOKEN_TYPE, actorChain, type ActorClaim } from '../../core/token-exchange.js';
import { canonicalizeResourceUri } from '../../core/uri.js';
import type { DpopKey } from '../dpop.js';
import type { Params } from '../http/params.js';
import { accessTokenExpiry, issueAccessToken, verifyOwnAccessToken, type AccessTokenClaims, type IssuedTokens } from '../tokens.js';
import type { DelegationRule, ResolvedTokenExchangeConfig } from './token-exchange-policy.js';
import type { TokenRequest } from './token-request.js';
import type { TokenIssuing } from './token-response.js';

/**
 * What a delegation needs: verifying our own access token and signing the new one, the store to
 * find the subject token's grant standing, and the log. No grant is created: the new token is the
 * subject token's grant's.
 */
export type DelegationServices = TokenIssuing;

/** A token exchange's answer (RFC 8693 §2.2.1): a token response that says what kind of token it holds. */
export interface ExchangedToken extends Omit<IssuedTokens, 'token_type'> {
  issued_token_type: string;
  /** N_A for a token that is no access token (RFC 8693 §2.2.1): an ID-JAG. */
  token_type: IssuedTokens['token_type'] | 'N_A';
}

export async function delegatedToken(
  ctx: DelegationServices,
  request: TokenRequest,
  subjectToken: string,
  settings: ResolvedTokenExchangeConfig,
): Promise<ExchangedToken> {
  const { client, params, dpopKey, now } = request;
  const requestedType = params.get('requested_token_type');
  if (requestedType !== undefined && requestedType !== ACCESS_TOKEN_TYPE) {
    throw new OAuthError('invalid_request', `an access token is exchanged for an access token only (requested_token_type ${ACCESS_TOKEN_TYPE})`);
  }
  // Before the subject token is looked at: a client no rule names costs a signature check nothing.
  if (!settings.delegations.some((rule) => rule.client === client.clientId))
    throw new OAuthError('unauthorized_client', 'this client may not exchange tokens: no delegation rule names it');
  const subject = await subjectAccessToken(ctx, subjectToken, dpopKey, now);
  const from = subject.aud;
  // The caller must be the server of the resource the token is for: else it is a client holding
  // the person's token, and could reach B without the person's consent to B.
  if (!settings.delegations.some((rule) => rule.client === client.clientId && rule.from === from)) {
    throw new OAuthError('unauthorized_client', "this client may not exchange tokens for the subject token's resource");
  }
  const to = target(params, ctx.config.resources);
  const rule = settings.delegations.find((candidate) => candidate.client === client.clientId && candidate.from === from && candidate.to === to);
  if (!rule) throw new OAuthError('invalid_target', `delegation from ${from} to ${to} is not allowed for this client`);
  // may_act (RFC 8693 §4.4): a subject token that names who may act for its subject names the caller.
  if (subject.may_act !== undefined && !mayAct(subject.may_act, client.clientId)) {
    throw new OAuthError('invalid_grant', "the subject token's may_act does not name this client");
  }
  const chain = actorChain(subject.act);
  if (!chain) throw new OAuthError('invalid_grant', "the subject token's act claim is malformed");
  if (chain.length + 1 > settings.maxDelegationDepth) {
    throw new OAuthError(
      'invalid_grant',
      `the subject token is already delegated: a chain of ${chain.length + 1} actors is more than this server allows (${settings.maxDelegationDepth})`,
    );
  }
  const scope = delegatedScope(params.get('scope'), parseScope(subject.scope), rule);
  const act: ActorClaim = subject.act ? { sub: client.clientId, act: subject.act } : { sub: client.clientId };
  const expiresAt = Math.min(accessTokenExpiry(ctx.config, now), subject.exp);
  const family = { id: subject[GRANT_ID_CLAIM], clientId: client.clientId, userId: subject.sub, scope, resource: to, authTime: subject.auth_time ?? null };
  const access = await issueAccessToken(ctx, family, scope, to, now, dpopKey, { act, expiresAt });
  ctx.log({
    event: 'token_issued',
    grant_type: TOKEN_EXCHANGE_GRANT_TYPE,
    client_id: client.clientId,
    grant_id: family.id,
    resource: to,
    subject_client_id: subject.client_id,
    actors: chain.length + 1,
  });
  return {
    access_token: access.token,
    issued_token_type: ACCESS_TOKEN_TYPE,
    token_type: dpopKey ? 'DPoP' : 'Bearer',
    expires_in: access.expiresIn,
    scope: formatScope(scope),
  };
}

/** Our access token, still valid: its signature, its expiry, its grant standing, itself not revoked, and its key shown when it is bound to one. */
async function subjectAccessToken(
  ctx: DelegationServices,
  token: string,
  dpopKey: DpopKey | undefined,
  now: number,
): Promise<AccessTokenClaims & { may_act?: unknown }> {
  const claims = await verifyOwnAccessToken({ config: ctx.config, keys: ctx.keys, now: () => now }, token);
  if (!claims) {
    // Said apart only for a token of ours, its signature checked with the clock set back to before it ended.
    const ended = await verifyOwnAccessToken({ config: ctx.config, keys: ctx.keys, now: () => 0 }, token);
    throw new OAuthError(
      'invalid_grant',
      ended && ended.exp <= now ? 'the subject token has expired' : 'the subject token is not an access token issued by this server',
    );
  }
  if (typeof claims.aud !== 'string' || typeof claims.sub !== 'string')
    throw new OAuthError('invalid_grant', 'the subject token is not an access token issued by this server');
  const grant = await ctx.store.getGrant(claims[GRANT_ID_CLAIM]);
  if (!grant || grant.revokedAt !== null || (await ctx.store.isAccessTokenRevoked(claims.jti)))
    throw new OAuthError('invalid_grant', 'the subject token has been revoked');
  // A person's token only: a client's own token (client credentials) has no one to act for.
  if (grant.userId === null || grant.userId !== claims.sub)
    throw new OAuthError('invalid_grant', "the subject token is not a person's: there is no one to act for");
  // A token bound to a key is only usable with proof of that key (RFC 9449): exchanging it is a use.
  if (claims.cnf && claims.cnf.jkt !== dpopKey?.jkt) {
    throw new OAuthError('invalid_grant', 'the subject token is bound to a DPoP key: send a DPoP proof made with that key');
  }
  return claims;
}

/** The resource the new token is for: `resource` (one, required; `audience` names no resource of ours). */
function target(params: Params, served: readonly string[]): string {
  if (params.has('audience')) throw new OAuthError('invalid_target', 'name the resource the token is for with resource, not audience');
  const requested = params.get('resource');
  if (requested === undefined) throw new OAuthError('invalid_target', 'resource is required: the resource the new token is for');
  let resource: string;
  try {
    resource = canonicalizeResourceUri(requested);
  } catch {
    throw new OAuthError('invalid_target', 'resource is not an absolute URI');
  }
  if (!served.includes(resource)) throw new OAuthError('invalid_target', 'resource is not a server this authorization server issues tokens for');
  return resource;
}

/** may_act's `sub` (or `client_id`) must be the caller. */
function mayAct(claim: unknown, clientId: string): boolean {
  if (typeof claim !== 'object' || claim === null) return false;
  const { sub, client_id: named } = claim as Record<string, unknown>;
  return sub === clientId || named === clientId;
}

/**
 * At most the subject token's scopes and the rule's. A request naming scopes gets those, each in
 * both, else invalid_scope naming those that are not; a request naming none gets all that are.
 */
function delegatedScope(requestedParam: string | undefined, held: string[], rule: DelegationRule): string[] {
  const allowed = held.filter((scope) => rule.scopes === undefined || rule.scopes.includes(scope));
  const requested = parseScope(requestedParam);
  if (requested.length > 0) {
    const refused = requested.filter((scope) => !allowed.includes(scope));
    if (refused.length > 0) throw new OAuthError('invalid_scope', `scope beyond the subject token's and this delegation's: ${refused.join(' ')}`);
    return requested;
  }
  if (allowed.length === 0) throw new OAuthError('invalid_scope', 'no scope of the subject token is one this delegation may carry');
  return allowed;
}
