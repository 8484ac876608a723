/**
 * `context-auth/core`: the protocol rules every role is built on, for a program that implements a
 * part of its own (a resource server's own DPoP check, a client's own token requests): errors,
 * resource URIs, PKCE, scopes, WWW-Authenticate, secrets and passwords, DPoP. No I/O.
 */
export { OAuthError, isOAuthError, type OAuthErrorCode } from './errors.js';
export type { GrantType, TokenEndpointAuthMethod } from './protocol.js';
export { DEVICE_CODE_GRANT_TYPE, JWT_BEARER_GRANT_TYPE } from './protocol.js';
export { authorizationServerMetadataUrls, canonicalizeResourceUri, isCanonicalResourceUri, normalizeIssuer, wellKnownUrl } from './uri.js';
export { checkCodeChallenge, s256, verifyCodeVerifier } from './pkce.js';
export { OFFLINE_ACCESS, formatScope, isSubset, parseScope } from './scopes.js';
export {
  bearerChallenge,
  dpopChallenge,
  findBearerChallenge,
  findChallenge,
  parseWwwAuthenticate,
  type BearerChallenge,
  type DpopChallenge,
  type ParsedChallenge,
} from './www-authenticate.js';
export { hashSecret, randomToken, safeEqual } from './secrets.js';
export { hashPassword, verifyPassword } from './passwords.js';
export { SecretBox, generateSecretKey, parseSecretKeys, type SealedValueDefect, type SecretKey } from './secret-box.js';
export type { Defect, Result } from './result.js';
export {
  DPOP_SIGNING_ALGORITHMS,
  DpopProofVerifier,
  accessTokenHash,
  dpopProofSigner,
  dpopTargetUri,
  generateDpopKeyPair,
  jwkThumbprint,
  type DpopCheck,
  type DpopCheckRequest,
  type DpopKeyPair,
  type DpopProof,
  type DpopProofRequest,
} from './dpop.js';
export { DpopNonces } from './dpop-nonce.js';
export { generateJwkPair, type KeyPairKind } from './key-pairs.js';
export { ReplayCache } from './replay-cache.js';
