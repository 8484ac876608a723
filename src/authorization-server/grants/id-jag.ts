/**
 * An Identity Assertion JWT Authorization Grant (ID-JAG; the MCP extension for enterprise-managed
 * authorization): a trusted enterprise IdP says, by a JWT it signed for us, that the person `sub`
 * may have a token for `resource`, through the client `client_id`. The client got it from the IdP
 * by token exchange (RFC 8693) and presents it here, authenticating as itself.
 */
import { OAuthError } from '../../core/errors.js';
import type { CompactJwt } from '../../core/jwt.js';
import { JWT_BEARER_GRANT_TYPE } from '../../core/protocol.js';
import { parseScope, resolveScope } from '../../core/scopes.js';
import { canonicalizeResourceUri } from '../../core/uri.js';
import type { ClientRecord } from '../../store/store.js';
import { AssertionDefect, spendAssertion, verifyAssertion, type VerifiedAssertion } from '../assertions/verify-assertion.js';
import { allowedScopes, machineScopeNote } from '../checks/authorization-request.js';
import type { ResolvedConfig, ResolvedJwtBearerConfig } from '../config.js';
import type { ServerContext } from '../context.js';
import type { Params } from '../http/params.js';
import type { IssuedTokens } from '../tokens.js';
import { upstreamUser } from '../upstream/users.js';
import { issueSingleAccessToken } from './token-response.js';

export const ID_JAG_TYP = 'oauth-id-jag+jwt';
/** Advertised as `authorization_grant_profiles_supported`. */
export const ID_JAG_PROFILE = 'urn:ietf:params:oauth:grant-profile:id-jag';
/**
 * The provider id the people of a trusted IdP are kept under, when no upstream sign-in provider
 * has the IdP's issuer (one that has lends its id, so a person who signs in both ways is one user).
 */
export const TRUSTED_IDP_PROVIDER = 'trusted-idp';
/** Allowed clock difference for the ID-JAG's exp and iat. */
const ASSERTION_CLOCK_TOLERANCE = 60;
/** The longest an ID-JAG may live: IdPs issue them for minutes. */
const MAX_LIFETIME_SECONDS = 3600;
const NAME = 'ID-JAG';

export async function idJagGrant(ctx: ServerContext, client: ClientRecord | null, params: Params, jwt: CompactJwt, settings: ResolvedJwtBearerConfig): Promise<IssuedTokens> {
  // Who presents it first: the grant is bound to a client that proves who it is.
  if (!client) throw new OAuthError('invalid_client', 'an ID-JAG is accepted only from a client that authenticates', 401);
  if (client.tokenEndpointAuthMethod === 'none') throw new OAuthError('unauthorized_client', 'ID-JAGs are accepted from confidential clients only');
  if (!client.grantTypes.includes(JWT_BEARER_GRANT_TYPE)) throw new OAuthError('unauthorized_client', `this client is not registered for the ${JWT_BEARER_GRANT_TYPE} grant`);
  const iss = jwt.claims.iss;
  // Before anything is fetched: a stranger's issuer costs us nothing.
  if (typeof iss !== 'string' || !settings.trustedIdps.includes(iss)) throw new AssertionDefect('the ID-JAG\'s issuer is not a trusted identity provider');

  const now = ctx.now();
  const keys = ctx.issuerKeys!.keysOf(iss, ['openid-configuration', 'oauth-authorization-server']);
  const verified = await verifyAssertion(
    jwt,
    keys,
    {
      name: NAME,
      typ: ID_JAG_TYP,
      // Our issuer identifier (the ID-JAG draft's `aud`); a list only when it names nothing else.
      audiences: [ctx.config.issuer],
      audienceList: true,
      expectedAudience: `the issuer identifier ${ctx.config.issuer}`,
      maxLifetimeSeconds: MAX_LIFETIME_SECONDS,
      clockToleranceSeconds: ASSERTION_CLOCK_TOLERANCE,
      requireIat: true,
    },
    now,
  );
  const { claims } = verified;
  if (claims.client_id !== client.clientId) throw new AssertionDefect('the ID-JAG\'s client_id is not the client that presents it');
  const resource = assertedResource(claims.resource, ctx.config.resources, params.get('resource'));
  const scope = idJagScope(params.get('scope'), claims.scope, client, ctx.config);
  // Last, once everything else holds: an ID-JAG refused for another reason can still be used by its client.
  await spendAssertion(ctx.store, verified, NAME, now, ASSERTION_CLOCK_TOLERANCE);

  const user = await upstreamUser(ctx, ctx.upstream?.providers.idForIssuer(iss) ?? TRUSTED_IDP_PROVIDER, identityOf(verified));
  // No refresh token: when the access token expires the client asks its IdP for a new ID-JAG, so
  // the IdP's policy (the person still employed, the app still assigned) is applied again.
  return issueSingleAccessToken(ctx, { clientId: client.clientId, userId: user.id, scope, resource }, now, {
    grant_type: JWT_BEARER_GRANT_TYPE,
    profile: 'id-jag',
    idp: iss,
    user_id: user.id,
  });
}

/** The `resource` claim (REQUIRED): one server we issue tokens for, and the request's `resource`, if sent, the same. */
function assertedResource(claim: unknown, served: readonly string[], requested: string | undefined): string {
  const value = Array.isArray(claim) && claim.length === 1 ? claim[0] : claim;
  if (typeof value !== 'string' || value === '') throw new AssertionDefect('the ID-JAG has no resource (one URI)');
  let resource: string;
  try {
    resource = canonicalizeResourceUri(value);
  } catch {
    throw new AssertionDefect('the ID-JAG\'s resource is not an absolute URI');
  }
  if (!served.includes(resource)) throw new AssertionDefect('the ID-JAG\'s resource is not a server this authorization server issues tokens for');
  if (requested !== undefined && canonicalizeResourceUri(requested) !== resource) {
    throw new OAuthError('invalid_target', 'the resource parameter is not the resource the ID-JAG was issued for');
  }
  return resource;
}

/**
 * The token's scopes. What the IdP granted is the ID-JAG's `scope`; an ID-JAG without one grants
 * only our default scopes, never everything the client may have. The request may name some of
 * those (each also allowed to the client), else it gets all of them that the client may have. A
 * requested scope beyond the grant is invalid_scope (RFC 6749 §5.2: it "exceeds the scope granted
 * by the resource owner"), naming the scope; one beyond the client's, invalid_scope saying why.
 */
function idJagScope(requestedParam: string | undefined, assertedClaim: unknown, client: ClientRecord, config: ResolvedConfig): string[] {
  if (assertedClaim !== undefined && typeof assertedClaim !== 'string') throw new AssertionDefect('the ID-JAG\'s scope is not a string');
  let asserted: string[] | undefined;
  try {
    asserted = assertedClaim === undefined ? undefined : parseScope(assertedClaim);
  } catch {
    throw new AssertionDefect('the ID-JAG\'s scope is malformed');
  }
  const granted = asserted ?? config.defaultScopes;
  const allowed = allowedScopes(client, config, 'client');
  const requested = parseScope(requestedParam);
  if (requested.length > 0) {
    const notGranted = requested.filter((scope) => !granted.includes(scope));
    if (notGranted.length > 0) {
      throw new OAuthError(
        'invalid_scope',
        asserted === undefined
          ? `scope not granted by the identity provider: ${notGranted.join(' ')} (the ID-JAG names no scope, so it grants only the default scopes: ${granted.join(' ')})`
          : `scope not granted by the identity provider: ${notGranted.join(' ')}`,
      );
    }
    return resolveScope(requested, allowed, [], machineScopeNote(client, config));
  }
  const scope = granted.filter((value) => allowed.includes(value));
  if (scope.length === 0) throw new OAuthError('invalid_scope', `none of the scopes the identity provider granted is one this client may have${asserted === undefined ? ' (the ID-JAG names no scope: the default scopes were taken)' : ''}`);
  return scope;
}

function identityOf(verified: VerifiedAssertion) {
  const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : null);
  return {
    issuer: verified.iss,
    subject: verified.sub,
    email: text(verified.claims.email),
    // The ID-JAG says nothing of how the address was checked: never used to decide anything.
    emailVerified: false,
    name: text(verified.claims.name),
    username: null,
    claims: verified.claims,
  };
}
