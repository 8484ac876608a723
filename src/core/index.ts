export { OAuthError, isOAuthError, type OAuthErrorCode, type TrustedRedirect } from './errors.js';
export type { AuthorizationRequest, GrantType, TokenEndpointAuthMethod } from './protocol.js';
export { DEVICE_CODE_GRANT_TYPE, JWT_BEARER_GRANT_TYPE } from './protocol.js';
export { authorizationServerMetadataUrls, canonicalizeResourceUri, isCanonicalResourceUri, isLoopbackHost, normalizeIssuer, wellKnownUrl } from './uri.js';
export { checkCodeChallenge, s256, verifyCodeVerifier } from './pkce.js';
export { matchRedirectUri, privateUseSchemeProblem, redirectUriProblem, type RedirectUriRules } from './redirect-uri.js';
export { OFFLINE_ACCESS, formatScope, isSubset, parseScope, resolveScope, withoutOfflineAccess } from './scopes.js';
export { bearerChallenge, dpopChallenge, findBearerChallenge, findChallenge, parseWwwAuthenticate, type BearerChallenge, type DpopChallenge, type ParsedChallenge } from './www-authenticate.js';
export { hashSecret, randomToken, safeEqual } from './secrets.js';
export { hashPassword, verifyPassword } from './passwords.js';
export { SecretBox, generateSecretKey, parseSecretKeys, secretKeyId, type SealedValueDefect, type SecretKey } from './secret-box.js';
export type { Defect, Result } from './result.js';
export { addressBucket, forwardedClientAddress, trustedProxies } from './client-address.js';
export { GRANT_ID_CLAIM, RevocationSet, type Revocation } from './revocation-set.js';
export { printable, printableJson, withoutControlCharacters } from './control-characters.js';
export {
  DPOP_SIGNING_ALGORITHMS, DpopProofVerifier, accessTokenHash, dpopProofSigner, dpopTargetUri, generateDpopKeyPair, jwkThumbprint,
  type DpopCheck, type DpopCheckRequest, type DpopKeyPair, type DpopProof, type DpopProofRequest,
} from './dpop.js';
export { DpopNonces } from './dpop-nonce.js';
export { ReplayCache } from './replay-cache.js';
