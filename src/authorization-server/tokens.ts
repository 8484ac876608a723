import type { JWTPayload } from 'jose';
import { jwtHeaderProblem, jwtTimeProblem, parseCompactJwt, verifyJwtSignature } from '../core/jwt.js';
import { GRANT_ID_CLAIM } from '../core/revocation-set.js';
import { formatScope } from '../core/scopes.js';
import { derivedToken, hashSecret, randomToken } from '../core/secrets.js';
import type { ActorClaim } from '../core/token-exchange.js';
import type { GrantRecord, RefreshTokenRecord } from '../store/store.js';
import type { ResolvedConfig } from './config.js';
import { bindToKey, type DpopKey } from './dpop.js';
import type { SigningKeys } from './keys.js';
import type { BaseServices } from './services.js';

/** What signing our access tokens needs: who we are, how long they live, and the keys. */
export interface TokenSigning {
  config: Pick<ResolvedConfig, 'issuer' | 'accessTokenTtl'>;
  keys: SigningKeys;
}

/** What issuing a token needs of its grant. */
export type TokenFamily = Pick<GrantRecord, 'id' | 'clientId' | 'userId' | 'scope' | 'resource' | 'authTime'>;

export interface IssuedTokens {
  access_token: string;
  /** DPoP when the access token is bound to the request's DPoP key (RFC 9449 §5). */
  token_type: 'Bearer' | 'DPoP';
  expires_in: number;
  scope: string;
  refresh_token?: string;
  /** OpenID Connect Core §3.1.3.3: who signed in, when `openid` is granted (id-tokens.ts). */
  id_token?: string;
}

/** Claims of our access tokens (RFC 9068 §2.2). */
export interface AccessTokenClaims extends JWTPayload {
  iss: string;
  sub: string;
  aud: string;
  client_id: string;
  scope: string;
  jti: string;
  iat: number;
  exp: number;
  auth_time?: number;
  /** Our private claim: the grant the token belongs to, so a resource server can refuse a revoked grant's tokens from memory. */
  grant_id: string;
  /** The DPoP key the token is bound to (RFC 9449 §6.1): only a request proving it holds that key may use the token. */
  cnf?: { jkt: string };
  /** A delegated token's actor (RFC 8693 §4.1): the client acting for `sub`, and who acted before it. */
  act?: ActorClaim;
}

/** What a delegated token (token exchange) has that others do not: its actor, and an end no later than its subject token's. */
export interface Delegation {
  act: ActorClaim;
  expiresAt: number;
}

/** When an access token issued at `now` expires: the store records it on the grant (accessExpiresAt) before the token is signed. */
export const accessTokenExpiry = (config: Pick<ResolvedConfig, 'accessTokenTtl'>, now: number): number => now + config.accessTokenTtl;

/**
 * Signs a JWT access token bound to one resource (`aud`), issued at `now`. Nothing is stored per
 * token: the caller has already raised its grant's accessExpiresAt to this token's expiry in the
 * store (while the grant stood), so a revocation of the grant covers it, and `grant_id` lets
 * revocation and introspection find the grant. Bound to `dpopKey`, the request's, when it has one.
 * A delegated token names its actor (`act`) and ends when `delegation` says.
 */
export async function issueAccessToken(
  services: TokenSigning,
  grant: TokenFamily,
  scope: string[],
  resource: string,
  now: number,
  dpopKey: DpopKey | undefined,
  delegation?: Delegation,
): Promise<{ token: string; expiresIn: number; jti: string }> {
  const { config, keys } = services;
  const jti = randomToken(16);
  const expiresAt = delegation?.expiresAt ?? accessTokenExpiry(config, now);
  const signing = keys.currentIfCached() ?? (await keys.current());
  const claims: Record<string, unknown> = { client_id: grant.clientId, scope: formatScope(scope), [GRANT_ID_CLAIM]: grant.id };
  if (grant.authTime !== null) claims.auth_time = grant.authTime;
  claims.iss = config.issuer;
  claims.sub = grant.userId ?? grant.clientId;
  claims.aud = resource;
  claims.jti = jti;
  claims.iat = now;
  claims.exp = expiresAt;
  if (dpopKey) claims.cnf = { jkt: dpopKey.jkt };
  if (delegation) claims.act = delegation.act;
  const token = signing.sign(claims);
  return { token, expiresIn: expiresAt - now, jti };
}

/**
 * A new refresh token for the grant, made at `now`: the caller saves (or rotates to) the returned
 * record. Bound to the request's DPoP key when it binds refresh tokens (a public client's).
 */
export function newRefreshToken(
  config: Pick<ResolvedConfig, 'refreshTokenTtl'>,
  grant: TokenFamily,
  scope: string[],
  now: number,
  dpopKey: DpopKey | undefined,
): { token: string; record: RefreshTokenRecord } {
  const token = newRefreshTokenValue(dpopKey);
  return {
    token,
    record: {
      tokenHash: hashSecret(token),
      grantId: grant.id,
      clientId: grant.clientId,
      scope: [...scope],
      createdAt: now,
      expiresAt: now + config.refreshTokenTtl,
    },
  };
}

/** A fresh refresh token string, bound to the request's DPoP key when the request binds refresh tokens. */
export function newRefreshTokenValue(dpopKey: DpopKey | undefined): string {
  return bindToKey(randomToken(32), boundKeyOfNewRefreshTokens(dpopKey));
}

/** The label successors' MAC keys are derived under from the signing keys (SigningKeys.macKeys). */
const SUCCESSOR_KEY_LABEL = 'context-auth refresh token successors';

/**
 * The keys refresh tokens' successors are derived with: one per published signing key, the
 * signing key's first. A rotation derives its new token with the first; a retry recomputes it
 * with each, since a key rotation may have come between the rotation and its retry.
 */
export function successorKeys(keys: SigningKeys): Promise<readonly Buffer[]> {
  return keys.macKeys(SUCCESSOR_KEY_LABEL);
}

/** successorKeys while the signing keys' cache is fresh, without a promise; undefined when they must be read. */
export function successorKeysIfCached(keys: SigningKeys): readonly Buffer[] | undefined {
  return keys.macKeysIfCached(SUCCESSOR_KEY_LABEL);
}

/**
 * The refresh token that a rotation of `presented` issues: a MAC of the presented token under
 * `key`, bound as newRefreshTokenValue binds. A retry of the rotation derives the very same token,
 * so whichever answer a client keeps, its next refresh works; nothing of it is stored but its
 * hash. Without the key (a signing key's secret) it is as unpredictable as a random token.
 */
export function successorRefreshTokenValue(dpopKey: DpopKey | undefined, presented: string, key: Buffer): string {
  return bindToKey(derivedToken(key, presented), boundKeyOfNewRefreshTokens(dpopKey));
}

const boundKeyOfNewRefreshTokens = (dpopKey: DpopKey | undefined): string | undefined => (dpopKey?.bindsRefreshTokens ? dpopKey.jkt : undefined);

/**
 * Verifies one of our own access tokens (signature with a published key, issuer, type, expiry).
 * Audience is not checked here: revocation and introspection accept tokens for any of our resources.
 */
export async function verifyOwnAccessToken(
  ctx: Pick<BaseServices, 'config' | 'now'> & { keys: SigningKeys },
  token: string,
): Promise<AccessTokenClaims | undefined> {
  const jwt = parseCompactJwt(token);
  if (!jwt || jwtHeaderProblem(jwt.header, { typ: 'at+jwt' }) || typeof jwt.header.kid !== 'string') return undefined;
  const key = await ctx.keys.verificationKey(jwt.header.kid);
  if (!key || !verifyJwtSignature(jwt, key)) return undefined;
  const { claims } = jwt;
  if (claims.iss !== ctx.config.issuer || jwtTimeProblem(claims, ctx.now(), 0)) return undefined;
  if (typeof claims.jti !== 'string' || typeof claims.client_id !== 'string' || typeof claims[GRANT_ID_CLAIM] !== 'string') return undefined;
  return claims as AccessTokenClaims;
}
