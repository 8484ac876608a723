/**
 * An Identity Assertion JWT Authorization Grant (ID-JAG; the MCP extension for enterprise-managed
 * authorization): a trusted enterprise IdP says, by a JWT it signed for us, that the person `sub`
 * may have a token for `resource`, through the client `client_id`. The client got it from the IdP
 * by token exchange (RFC 8693) and presents it here, authenticating as itself.
 */
import { OAuthError } from '../../core/errors.js';
import { ID_JAG_TYP } from '../../core/id-jag.js';
import type { CompactJwt } from '../../core/jwt.js';
import { JWT_BEARER_GRANT_TYPE } from '../../core/protocol.js';
import { fail, ok, type Result } from '../../core/result.js';
import { parseScope, resolveScope } from '../../core/scopes.js';
import { canonicalizeResourceUri } from '../../core/uri.js';
import type { ClientRecord } from '../../store/store.js';
import { spendAssertion, verifyAssertion, type VerifiedAssertion } from '../assertions/verify-assertion.js';
import { allowedScopes, machineScopeNote } from '../checks/authorization-request.js';
import type { IssuerKeys } from '../assertions/issuer-keys.js';
import type { ResolvedConfig, ResolvedJwtBearerConfig } from '../config.js';
import type { BaseServices } from '../services.js';
import type { IssuedTokens } from '../tokens.js';
import type { UpstreamServices } from '../upstream/upstream-sign-in.js';
import { upstreamUser } from '../upstream/users.js';
import { jwtBearerError, type JwtBearerDefect } from './jwt-bearer-errors.js';
import type { TokenRequest } from './token-request.js';
import { issueSingleAccessToken, type TokenIssuing } from './token-response.js';

/**
 * What the ID-JAG grant needs: the IdPs' keys, the upstream providers (one may lend its id to
 * the IdP's people), and issuing tokens; users are created at `now`.
 */
export type IdJagServices = TokenIssuing & Pick<BaseServices, 'now'> & UpstreamServices & { issuerKeys: IssuerKeys | null };

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

/** An ID-JAG that passed every check of its own: the assertion, the resource it is for (undefined: none named), the scopes it grants (undefined: none named). */
interface CheckedIdJag {
  assertion: VerifiedAssertion;
  resource: string | undefined;
  scope: string[] | undefined;
}

export async function idJagGrant(
  ctx: IdJagServices,
  request: TokenRequest<ClientRecord | null>,
  jwt: CompactJwt,
  settings: ResolvedJwtBearerConfig,
): Promise<IssuedTokens> {
  const { client, params, now } = request;
  // Who presents it first: the grant is bound to a client that proves who it is.
  if (!client) throw new OAuthError('invalid_client', 'an ID-JAG is accepted only from a client that authenticates', 401);
  if (client.tokenEndpointAuthMethod === 'none') throw new OAuthError('unauthorized_client', 'ID-JAGs are accepted from confidential clients only');
  if (!client.grantTypes.includes(JWT_BEARER_GRANT_TYPE))
    throw new OAuthError('unauthorized_client', `this client is not registered for the ${JWT_BEARER_GRANT_TYPE} grant`);
  const checked = await checkIdJag(ctx, client, jwt, settings, now);
  if (!checked.ok) throw jwtBearerError(ctx, checked.defect);
  const { assertion } = checked.value;
  const resource = tokenResource(params.get('resource'), checked.value.resource, ctx.config);
  const scope = idJagScope(params.get('scope'), checked.value.scope, client, ctx.config);
  // Last, once everything else holds: an ID-JAG refused for another reason can still be used by its client.
  const spent = await spendAssertion(ctx.store, assertion, NAME, now, ASSERTION_CLOCK_TOLERANCE);
  if (!spent.ok) throw jwtBearerError(ctx, spent.defect);

  const iss = assertion.iss;
  const user = await upstreamUser(ctx, ctx.upstream?.providers.idForIssuer(iss) ?? TRUSTED_IDP_PROVIDER, identityOf(assertion));
  // No refresh token: when the access token expires the client asks its IdP for a new ID-JAG, so
  // the IdP's policy (the person still employed, the app still assigned) is applied again.
  return issueSingleAccessToken(
    ctx,
    request,
    { clientId: client.clientId, userId: user.id, scope, resource },
    {
      grant_type: JWT_BEARER_GRANT_TYPE,
      profile: 'id-jag',
      idp: iss,
      user_id: user.id,
    },
  );
}

/** The ID-JAG's own checks: a trusted issuer, its signature and claims, for this client, a resource we serve, a well-formed scope. */
async function checkIdJag(
  ctx: IdJagServices,
  client: ClientRecord,
  jwt: CompactJwt,
  settings: ResolvedJwtBearerConfig,
  now: number,
): Promise<Result<CheckedIdJag, JwtBearerDefect>> {
  const iss = jwt.claims.iss;
  // Before anything is fetched: a stranger's issuer costs us nothing.
  if (typeof iss !== 'string' || !settings.trustedIdps.includes(iss))
    return fail({ code: 'issuer', description: "the ID-JAG's issuer is not a trusted identity provider" });
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
  if (!verified.ok) return verified;
  const { claims } = verified.value;
  if (claims.client_id !== client.clientId) return fail({ code: 'client', description: "the ID-JAG's client_id is not the client that presents it" });
  const resource = assertedResource(claims.resource, ctx.config.resources);
  if (!resource.ok) return resource;
  const scope = assertedScope(claims.scope);
  if (!scope.ok) return scope;
  return ok({ assertion: verified.value, resource: resource.value, scope: scope.value });
}

/** The `resource` claim (OPTIONAL in the ID-JAG draft): one server we issue tokens for, or undefined when it names none. */
function assertedResource(claim: unknown, served: readonly string[]): Result<string | undefined, JwtBearerDefect> {
  if (claim === undefined) return ok(undefined);
  const value = Array.isArray(claim) && claim.length === 1 ? claim[0] : claim;
  if (typeof value !== 'string' || value === '') return fail({ code: 'resource', description: "the ID-JAG's resource is not one URI" });
  let resource: string;
  try {
    resource = canonicalizeResourceUri(value);
  } catch {
    return fail({ code: 'resource', description: "the ID-JAG's resource is not an absolute URI" });
  }
  if (!served.includes(resource))
    return fail({ code: 'resource', description: "the ID-JAG's resource is not a server this authorization server issues tokens for" });
  return ok(resource);
}

/**
 * The token's resource. An ID-JAG that names one binds the token to it, and a `resource`
 * parameter must name the same. One that names none lets the IdP's grant cover every server we
 * issue tokens for: the parameter picks one of them, else the default resource.
 */
function tokenResource(requestedParam: string | undefined, asserted: string | undefined, config: ResolvedConfig): string {
  let requested: string | undefined;
  try {
    requested = requestedParam === undefined ? undefined : canonicalizeResourceUri(requestedParam);
  } catch {
    throw new OAuthError('invalid_target', 'the resource parameter is not an absolute URI');
  }
  if (asserted !== undefined) {
    if (requested !== undefined && requested !== asserted)
      throw new OAuthError('invalid_target', 'the resource parameter is not the resource the ID-JAG was issued for');
    return asserted;
  }
  if (requested === undefined) return config.defaultResource;
  if (!config.resources.includes(requested))
    throw new OAuthError('invalid_target', 'the resource parameter is not a server this authorization server issues tokens for');
  return requested;
}

/** The `scope` claim: the scopes the IdP granted, or undefined when it names none. */
function assertedScope(claim: unknown): Result<string[] | undefined, JwtBearerDefect> {
  if (claim === undefined) return ok(undefined);
  if (typeof claim !== 'string') return fail({ code: 'scope', description: "the ID-JAG's scope is not a string" });
  try {
    return ok(parseScope(claim));
  } catch {
    return fail({ code: 'scope', description: "the ID-JAG's scope is malformed" });
  }
}

/**
 * The token's scopes. What the IdP granted is the ID-JAG's `scope`; an ID-JAG without one grants
 * only our default scopes, never everything the client may have. The request may name some of
 * those (each also allowed to the client), else it gets all of them that the client may have. A
 * requested scope beyond the grant is invalid_scope (RFC 6749 §5.2: it "exceeds the scope granted
 * by the resource owner"), naming the scope; one beyond the client's, invalid_scope saying why.
 */
function idJagScope(requestedParam: string | undefined, asserted: string[] | undefined, client: ClientRecord, config: ResolvedConfig): string[] {
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
  if (scope.length === 0)
    throw new OAuthError(
      'invalid_scope',
      `none of the scopes the identity provider granted is one this client may have${asserted === undefined ? ' (the ID-JAG names no scope: the default scopes were taken)' : ''}`,
    );
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
