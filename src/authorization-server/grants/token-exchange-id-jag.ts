/**
 * Issuing an Identity Assertion JWT Authorization Grant (ID-JAG; draft-ietf-oauth-identity-assertion-authz-grant)
 * by token exchange, as the people's identity provider: a client holding a person's ID token or
 * refresh token of ours asks for an ID-JAG for another authorization server (`audience`), which that server
 * redeems for its own access token (the jwt-bearer grant) without asking the person again. The
 * operator names the authorization servers we issue for, and may name which clients may ask; the
 * ID-JAG carries no more scopes than the person consented to for that client.
 */
import { randomToken, hashSecret } from '../../core/secrets.js';
import { unreachable } from '../../core/result.js';
import { OAuthError } from '../../core/errors.js';
import { jwtSigner } from '../../core/jwt.js';
import { formatScope, isSubset, OPENID_SCOPES, parseScope, withoutOfflineAccess } from '../../core/scopes.js';
import { ID_JAG_TOKEN_TYPE, ID_JAG_TYP, ID_TOKEN_TYPE, TOKEN_EXCHANGE_GRANT_TYPE } from '../../core/id-jag.js';
import { REFRESH_TOKEN_TYPE } from '../../core/token-exchange.js';
import { canonicalizeResourceUri, normalizeIssuer } from '../../core/uri.js';
import type { ClientRecord, GrantRecord } from '../../store/store.js';
import { requireBoundKey, type DpopKey } from '../dpop.js';
import { verifyOwnIdToken } from '../id-tokens.js';
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

export async function issueIdJag(
  ctx: IdJagIssuingServices,
  request: TokenRequest,
  subjectToken: string,
  subjectTokenType: string,
  settings: ResolvedTokenExchangeConfig,
): Promise<ExchangedToken> {
  const { client, params, dpopKey, now } = request;
  if (subjectTokenType !== REFRESH_TOKEN_TYPE && subjectTokenType !== ID_TOKEN_TYPE) {
    throw new OAuthError(
      'invalid_request',
      `an ID-JAG is issued for an ID token or a refresh token of this server (subject_token_type ${ID_TOKEN_TYPE} or ${REFRESH_TOKEN_TYPE})`,
    );
  }
  const audience = allowedAudience(params.get('audience'), settings.idJagAudiences);
  const clientIdThere = audience.clients === null ? client.clientId : audience.clients[client.clientId];
  if (clientIdThere === undefined) throw new OAuthError('unauthorized_client', `this client may not ask for ID-JAGs for ${audience.issuer}`);
  const { grant, userId, consented } =
    subjectTokenType === ID_TOKEN_TYPE ? await grantOfIdToken(ctx, client, subjectToken) : await personsGrant(ctx, client, subjectToken, dpopKey, now);
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
  ctx.log({
    event: 'token_issued',
    grant_type: TOKEN_EXCHANGE_GRANT_TYPE,
    profile: 'id-jag',
    client_id: client.clientId,
    grant_id: grant.id,
    user_id: userId,
    audience: audience.issuer,
  });
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
async function personsGrant(
  ctx: IdJagIssuingServices,
  client: ClientRecord,
  presented: string,
  dpopKey: DpopKey | undefined,
  now: number,
): Promise<{ grant: GrantRecord; userId: string; consented: string[] }> {
  requireBoundKey(presented, dpopKey, 'refresh token');
  const record = await ctx.store.getRefreshToken(hashSecret(presented));
  if (!record || record.clientId !== client.clientId)
    throw new OAuthError('invalid_grant', 'the subject token is not a refresh token this server issued to this client');
  if (record.expiresAt <= now) throw new OAuthError('invalid_grant', 'the subject token has expired');
  const grant = await ctx.store.getGrant(record.grantId);
  if (!grant || grant.revokedAt !== null) throw new OAuthError('invalid_grant', 'the subject token has been revoked');
  if (grant.userId === null) throw new OAuthError('invalid_grant', "the subject token is not a person's");
  if (grant.upstreamSessionId !== null) await upstreamTokensOfGrant(ctx, grant);
  return { grant, userId: grant.userId, consented: assertable(record.scope) };
}

/**
 * The person's grant behind an ID token of ours issued to this client, still standing, with what
 * the person consented to in it; as for a refresh token, the upstream sign-in behind it must
 * still be honoured. An ID token is a bearer token: no DPoP key is asked for.
 */
async function grantOfIdToken(
  ctx: IdJagIssuingServices,
  client: ClientRecord,
  presented: string,
): Promise<{ grant: GrantRecord; userId: string; consented: string[] }> {
  const verified = await verifyOwnIdToken(ctx, presented, client.clientId);
  if (!verified.ok) {
    switch (verified.refusal) {
      case 'not_ours':
        throw new OAuthError('invalid_grant', 'the subject token is not an ID token this server issued');
      case 'expired':
        throw new OAuthError('invalid_grant', 'the subject token has expired');
      case 'other_client':
        throw new OAuthError('invalid_grant', 'the subject token is an ID token issued to another client');
      default:
        return unreachable(verified.refusal);
    }
  }
  const grant = await ctx.store.getGrant(verified.grantId);
  if (!grant || grant.revokedAt !== null || grant.userId !== verified.sub || grant.clientId !== client.clientId) {
    throw new OAuthError('invalid_grant', 'the subject token has been revoked');
  }
  if (grant.upstreamSessionId !== null) await upstreamTokensOfGrant(ctx, grant);
  return { grant, userId: verified.sub, consented: assertable(grant.scope) };
}

/**
 * What of a person's consent an ID-JAG may assert: access, never the OpenID scopes, which let this
 * client learn who the person is here and grant nothing at another server.
 */
function assertable(scope: readonly string[]): string[] {
  return withoutOfflineAccess(scope).filter((value) => !OPENID_SCOPES.includes(value));
}

/** Never more than the person consented to for this client: the request may narrow it, no more. */
function assertedScope(requestedParam: string | undefined, consented: string[]): string[] {
  const requested = withoutOfflineAccess(parseScope(requestedParam));
  if (requested.length === 0) return consented;
  const openid = requested.filter((scope) => OPENID_SCOPES.includes(scope));
  if (openid.length > 0) throw new OAuthError('invalid_scope', `an ID-JAG asserts no OpenID scope (${openid.join(' ')}): they grant nothing at another server`);
  if (!isSubset(requested, consented)) {
    throw new OAuthError(
      'invalid_scope',
      `scope beyond what the person consented to for this client: ${requested.filter((scope) => !consented.includes(scope)).join(' ')}`,
    );
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
