/**
 * A delegated token (RFC 8693 §1.1, delegation): the server of resource A, holding a person's
 * access token for A, asks for a token for resource B to call B on the person's behalf. The new
 * token names the person as `sub` and the caller in `act` (with the subject token's own actors
 * nested inside, for a chain), carries no more than the subject token's scopes and the policy's,
 * and ends no later than the subject token. It names the subject token's grant, so revoking the
 * person's grant refuses every token delegated from it too. The checks of the subject token and
 * the rules of the new one are shared with a gateway's delegation (token-exchange-gateway.ts).
 */
import { OAuthError } from '../../core/errors.js';
import { fail, ok, type Defect, type Result } from '../../core/result.js';
import { GRANT_ID_CLAIM } from '../../core/revocation-set.js';
import { formatScope, parseScope } from '../../core/scopes.js';
import { TOKEN_EXCHANGE_GRANT_TYPE } from '../../core/id-jag.js';
import { ACCESS_TOKEN_TYPE, actorChain, type ActorClaim } from '../../core/token-exchange.js';
import { canonicalizeResourceUri } from '../../core/uri.js';
import type { DpopKey } from '../dpop.js';
import type { Params } from '../http/params.js';
import { accessTokenExpiry, issueAccessToken, verifyOwnAccessToken, type AccessTokenClaims, type IssuedTokens } from '../tokens.js';
import type { ResolvedTokenExchangeConfig } from './token-exchange-policy.js';
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

/** The token endpoint's delegation: the authenticated client is the actor, the policy's rules say what it may ask for. */
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
  const checked = await checkSubjectToken(ctx, subjectToken, dpopKey?.jkt, now);
  if (!checked.ok) throw new OAuthError('invalid_grant', checked.defect.description);
  const subject = checked.value;
  // A person's token only: a client's own token (client credentials) has no one to act for.
  if (subject.userId === null) throw new OAuthError('invalid_grant', "the subject token is not a person's: there is no one to act for");
  const from = subject.claims.aud;
  // The caller must be the server of the resource the token is for: else it is a client holding
  // the person's token, and could reach B without the person's consent to B.
  if (!settings.delegations.some((rule) => rule.client === client.clientId && rule.from === from)) {
    throw new OAuthError('unauthorized_client', "this client may not exchange tokens for the subject token's resource");
  }
  const to = target(params, ctx.config.resources);
  const rule = settings.delegations.find((candidate) => candidate.client === client.clientId && candidate.from === from && candidate.to === to);
  if (!rule) throw new OAuthError('invalid_target', `delegation from ${from} to ${to} is not allowed for this client`);
  const issued = await issueDelegatedToken(ctx, subject, {
    actor: client.clientId,
    clientId: client.clientId,
    to,
    allowedScopes: rule.scopes,
    requestedScope: params.get('scope'),
    maxDepth: settings.maxDelegationDepth,
    dpopKey,
    expiresAt: Math.min(accessTokenExpiry(ctx.config, now), subject.claims.exp),
    now,
  });
  return {
    access_token: issued.token,
    issued_token_type: ACCESS_TOKEN_TYPE,
    token_type: dpopKey ? 'DPoP' : 'Bearer',
    expires_in: issued.expiresIn,
    scope: formatScope(issued.scope),
  };
}

/** A subject token found good: its claims, and the person of its grant (null for a client's own token). */
export interface SubjectToken {
  claims: AccessTokenClaims & { may_act?: unknown };
  userId: string | null;
}

/** Why a subject token cannot be exchanged, whoever asks: not ours (or no access token), ended, revoked, or bound to a key no proof was shown for. */
export type SubjectDefect = Defect<'not_ours' | 'expired' | 'revoked' | 'unproven_key'>;

/**
 * Our access token, still valid: its signature, its expiry, its grant standing, itself not
 * revoked, and, when it is bound to a key, a proof of that key shown (`proofJkt`, the thumbprint
 * of the key a checked proof was made with).
 */
export async function checkSubjectToken(
  ctx: DelegationServices,
  token: string,
  proofJkt: string | undefined,
  now: number,
): Promise<Result<SubjectToken, SubjectDefect>> {
  const claims = await verifyOwnAccessToken({ config: ctx.config, keys: ctx.keys, now: () => now }, token);
  if (!claims) {
    // Said apart only for a token of ours, its signature checked with the clock set back to before it ended.
    const ended = await verifyOwnAccessToken({ config: ctx.config, keys: ctx.keys, now: () => 0 }, token);
    return ended && ended.exp <= now
      ? fail({ code: 'expired', description: 'the subject token has expired' })
      : fail({ code: 'not_ours', description: 'the subject token is not an access token issued by this server' });
  }
  if (typeof claims.aud !== 'string' || typeof claims.sub !== 'string')
    return fail({ code: 'not_ours', description: 'the subject token is not an access token issued by this server' });
  const grant = await ctx.store.getGrant(claims[GRANT_ID_CLAIM]);
  if (!grant || grant.revokedAt !== null || (await ctx.store.isAccessTokenRevoked(claims.jti)))
    return fail({ code: 'revoked', description: 'the subject token has been revoked' });
  // The grant's own subject: its person, or for a client's own token the client.
  if (claims.sub !== (grant.userId ?? grant.clientId))
    return fail({ code: 'not_ours', description: 'the subject token is not an access token issued by this server' });
  // A token bound to a key is only usable with proof of that key (RFC 9449): exchanging it is a use.
  if (claims.cnf && claims.cnf.jkt !== proofJkt) {
    return fail({ code: 'unproven_key', description: 'the subject token is bound to a DPoP key: send a DPoP proof made with that key' });
  }
  return ok({ claims, userId: grant.userId });
}

/** What a delegation makes of a good subject token: who acts, for whom the token is, what it may carry, when it ends. */
export interface DelegationTerms {
  /** The new actor, named in `act`: a client of ours, or a gateway's resource. */
  actor: string;
  /** The new token's `client_id`. */
  clientId: string;
  /** Its audience. */
  to: string;
  /** The most the rule lets it carry; undefined: the subject token's scopes. */
  allowedScopes: readonly string[] | undefined;
  /** The scopes asked for (a space-separated list); undefined: all that are allowed. */
  requestedScope: string | undefined;
  maxDepth: number;
  /** The key the new token is bound to, if any. */
  dpopKey: DpopKey | undefined;
  /** Its end: never later than the subject token's. */
  expiresAt: number;
  now: number;
}

/**
 * The rules every delegation passes, at the token endpoint or for a gateway: may_act names the
 * actor, the actor chain stays within the depth allowed, the scopes within the subject token's;
 * then the token is signed, naming the actor in `act` over the subject token's own, and logged.
 * Throws the OAuthError of the rule it breaks.
 */
export async function issueDelegatedToken(
  ctx: DelegationServices,
  subject: SubjectToken,
  terms: DelegationTerms,
): Promise<{ token: string; expiresIn: number; scope: string[] }> {
  const { claims } = subject;
  // may_act (RFC 8693 §4.4): a subject token that names who may act for its subject names the caller.
  if (claims.may_act !== undefined && !mayAct(claims.may_act, terms.actor)) {
    throw new OAuthError('invalid_grant', `the subject token's may_act does not name ${terms.actor === terms.clientId ? 'this client' : terms.actor}`);
  }
  const chain = actorChain(claims.act);
  if (!chain) throw new OAuthError('invalid_grant', "the subject token's act claim is malformed");
  if (chain.length + 1 > terms.maxDepth) {
    throw new OAuthError(
      'invalid_grant',
      `the subject token is already delegated: a chain of ${chain.length + 1} actors is more than this server allows (${terms.maxDepth})`,
    );
  }
  const scope = delegatedScope(terms.requestedScope, parseScope(claims.scope), terms.allowedScopes);
  const act: ActorClaim = claims.act ? { sub: terms.actor, act: claims.act } : { sub: terms.actor };
  const expiresAt = Math.min(terms.expiresAt, claims.exp);
  const family = {
    id: claims[GRANT_ID_CLAIM],
    clientId: terms.clientId,
    userId: subject.userId,
    scope,
    resource: terms.to,
    authTime: claims.auth_time ?? null,
  };
  const access = await issueAccessToken(ctx, family, scope, terms.to, terms.now, terms.dpopKey, { act, expiresAt });
  ctx.log({
    event: 'token_issued',
    grant_type: TOKEN_EXCHANGE_GRANT_TYPE,
    client_id: terms.clientId,
    grant_id: family.id,
    resource: terms.to,
    subject_client_id: claims.client_id,
    ...(terms.actor === terms.clientId ? {} : { actor: terms.actor }),
    actors: chain.length + 1,
  });
  return { token: access.token, expiresIn: access.expiresIn, scope };
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

/** may_act's `sub` (or `client_id`) must be the actor. */
function mayAct(claim: unknown, actor: string): boolean {
  if (typeof claim !== 'object' || claim === null) return false;
  const { sub, client_id: named } = claim as Record<string, unknown>;
  return sub === actor || named === actor;
}

/**
 * At most the subject token's scopes and the rule's. A request naming scopes gets those, each in
 * both, else invalid_scope naming those that are not; a request naming none gets all that are.
 */
function delegatedScope(requestedParam: string | undefined, held: string[], ruleScopes: readonly string[] | undefined): string[] {
  const allowed = held.filter((scope) => ruleScopes === undefined || ruleScopes.includes(scope));
  const requested = parseScope(requestedParam);
  if (requested.length > 0) {
    const refused = requested.filter((scope) => !allowed.includes(scope));
    if (refused.length > 0) throw new OAuthError('invalid_scope', `scope beyond the subject token's and this delegation's: ${refused.join(' ')}`);
    return requested;
  }
  if (allowed.length === 0) throw new OAuthError('invalid_scope', 'no scope of the subject token is one this delegation may carry');
  return allowed;
}
