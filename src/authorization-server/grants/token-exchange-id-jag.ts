/**
 * Issuing an Identity Assertion JWT Authorization Grant (ID-JAG; draft-ietf-oauth-identity-assertion-authz-grant)
 * by token exchange, as the people's identity provider: a client holding a person's refresh token
 * of ours asks for an ID-JAG for another authorization server (`audience`), which that server
 * redeems for its own access token (the jwt-bearer grant) without asking the person again. The
 * operator names the authorization servers we issue for, and may name which clients may ask; the
 * ID-JAG carries no more scopes than the person consented to for that client.
 */
import { randomToken, hashSecret } from '../../core/secrets.js';
import { OAuthError } from '../../core/errors.js';
import { jwtSigner } from '../../core/jwt.js';
import { formatScope, isSubset, parseScope, withoutOfflineAccess } from '../../core/scopes.js';
import { ID_JAG_TOKEN_TYPE, ID_JAG_TYP, TOKEN_EXCHANGE_GRANT_TYPE } from '../../core/id-jag.js';
import { REFRESH_TOKEN_TYPE } from '../../core/token-exchange.js';
import { canonicalizeResourceUri, normalizeIssuer } from '../../core/uri.js';
import type { ClientRecord, GrantRecord } from '../../store/store.js';
import { requireBoundKey, type DpopKey } from '../dpop.js';
import { upstreamTokensOfGrant, type UpstreamGrantServices } from '../upstream/session.js';
import type { ExchangedToken } from './token-exchange-delegation.js';
import type { IdJagAudience, ResolvedTokenExchangeConfig } from './token-exchange-policy.js';
import type { TokenRequest } from './token-request.js';
import type { TokenIssuing } from './token-response.js';

/**
 * What issuing an ID-JAG needs: our issuer and signing keys, the store to find the person's grant
 * behind the refresh token (and their email), the log, and checking (or ending) the upstream
 * sign-in behind that grant.
 */
export type IdJagIssuingServices = TokenIssuing & UpstreamGrantServices;

/** How long an ID-JAG lives: long enough to be presented once, at once. */
export const ID_JAG_LIFETIME_SECONDS = 300;

export async function issueIdJag(ctx: IdJagIssuingServices, request: TokenRequest, subjectToken: string, subjectTokenType: string, settings: ResolvedTokenExchangeConfig): Promise<ExchangedToken> {
  const { client, params, dpopKey, now } = request;
  if (subjectTokenType !== REFRESH_TOKEN_TYPE) throw new OAuthError('invalid_request', `an ID-JAG is issued for a refresh token of this server (subject_token_type ${REFRESH_TOKEN_TYPE})`);
  const audience = allowedAudience(params.get('audience'), settings.idJagAudiences);
  const clientIdThere = audience.clients === null ? client.clientId : audience.clients[client.clientId];
  if (clientIdThere === undefined) throw new OAuthError('unauthorized_client', `this client may not ask for ID-JAGs for ${audience.issuer}`);
  const { grant, userId, consented } = await personsGrant(ctx, client, subjectToken, dpopKey, now);
  const scope = assertedScope(params.get('scope'), consented);
  const resource = requestedResource(params.get('resource'));

  const claims: Record<string, unknown> = {
    iss: ctx.config.issuer,
    sub: userId,
    aud: audience.issuer,
    client_id: clientIdThere,
    jti: randomToken(16),
    iat: now,
    exp: now + ID_JAG_LIFETIME_SECONDS,
    ...(resource === undefined ? {} : { resource }),
    ...(scope.length === 0 ? {} : { scope: formatScope(scope) }),
  };
  if (audience.email) {
    const email = (await ctx.store.listUserIdentities({ userId })).find((identity) => identity.email !== null)?.email;
    if (email) claims.email = email;
  }
  const signing = ctx.keys.currentIfCached() ?? (await ctx.keys.current());
  const assertion = jwtSigner({ alg: signing.alg, kid: signing.kid, typ: ID_JAG_TYP }, signing.key)(claims);
  ctx.log({ event: 'token_issued', grant_type: TOKEN_EXCHANGE_GRANT_TYPE, profile: 'id-jag', client_id: client.clientId, grant_id: grant.id, user_id: userId, audience: audience.issuer });
  return {
    access_token: assertion,
    issued_token_type: ID_JAG_TOKEN_TYPE,
    // RFC 8693 §2.2.1: the issued token is no access token, so it has no token type of its own.
    token_type: 'N_A',
    expires_in: ID_JAG_LIFETIME_SECONDS,
    scope: formatScope(scope),
  };
}

/** `audience` (REQUIRED): the issuer of an authorization server the operator named. */
function allowedAudience(requested: string | undefined, audiences: readonly IdJagAudience[]): IdJagAudience {
  if (requested === undefined) throw new OAuthError('invalid_request', 'audience is required: the issuer of the authorization server the ID-JAG is for');
  let issuer: string;
  try {
    issuer = normalizeIssuer(requested);
  } catch {
    throw new OAuthError('invalid_target', 'audience is not an authorization server issuer');
  }
  const audience = audiences.find((candidate) => candidate.issuer === issuer);
  if (!audience) throw new OAuthError('invalid_target', 'this server does not issue ID-JAGs for that audience');
  return audience;
}

/**
 * The person's grant behind the client's refresh token, still standing: the token is the client's,
 * unexpired, unspent, of a grant not revoked, for a person, shown with its DPoP key when bound to
 * one, and, behind an upstream sign-in, one the upstream still honours. Nothing is spent: the
 * client keeps its refresh token.
 */
async function personsGrant(ctx: IdJagIssuingServices, client: ClientRecord, presented: string, dpopKey: DpopKey | undefined, now: number): Promise<{ grant: GrantRecord; userId: string; consented: string[] }> {
  requireBoundKey(presented, dpopKey, 'refresh token');
  const record = await ctx.store.getRefreshToken(hashSecret(presented));
  if (!record || record.clientId !== client.clientId) throw new OAuthError('invalid_grant', 'the subject token is not a refresh token this server issued to this client');
  if (record.expiresAt <= now) throw new OAuthError('invalid_grant', 'the subject token has expired');
  const grant = await ctx.store.getGrant(record.grantId);
  if (!grant || grant.revokedAt !== null) throw new OAuthError('invalid_grant', 'the subject token has been revoked');
  if (grant.userId === null) throw new OAuthError('invalid_grant', "the subject token is not a person's");
  if (grant.upstreamSessionId !== null) await upstreamTokensOfGrant(ctx, grant);
  return { grant, userId: grant.userId, consented: withoutOfflineAccess(record.scope) };
}

/** Never more than the person consented to for this client: the request may narrow it, no more. */
function assertedScope(requestedParam: string | undefined, consented: string[]): string[] {
  const requested = withoutOfflineAccess(parseScope(requestedParam));
  if (requested.length === 0) return consented;
  if (!isSubset(requested, consented)) {
    throw new OAuthError('invalid_scope', `scope beyond what the person consented to for this client: ${requested.filter((scope) => !consented.includes(scope)).join(' ')}`);
  }
  return requested;
}

/** `resource` (OPTIONAL): the server at the audience the client will call, an absolute URI. */
function requestedResource(requested: string | undefined): string | undefined {
  if (requested === undefined) return undefined;
  try {
    return canonicalizeResourceUri(requested);
  } catch {
    throw new OAuthError('invalid_target', 'resource is not an absolute URI');
  }
}
