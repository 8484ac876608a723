export { OAuthError, isOAuthError, type OAuthErrorCode, type TrustedRedirect } from './errors.js';
export type { AuthorizationRequest, GrantType, TokenEndpointAuthMethod } from './protocol.js';
export { authorizationServerMetadataUrls, canonicalizeResourceUri, isCanonicalResourceUri, isLoopbackHost, normalizeIssuer, wellKnownUrl } from './uri.js';
export { checkCodeChallenge, s256, verifyCodeVerifier } from './pkce.js';
export { matchRedirectUri, redirectUriProblem } from './redirect-uri.js';
export { formatScope, isSubset, parseScope, resolveScope } from './scopes.js';
export { bearerChallenge, findBearerChallenge, parseWwwAuthenticate, type BearerChallenge, type ParsedChallenge } from './www-authenticate.js';
export { hashSecret, randomToken, safeEqual } from './secrets.js';
export { hashPassword, verifyPassword } from './passwords.js';
