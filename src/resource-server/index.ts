export {
  protectedResource,
  toMcpAuthInfo,
  type ProtectedResource,
  type ProtectedResourceOptions,
  type GuardRequest,
  type GuardResult,
  type Denial,
} from './guard.js';
export type { DpopOptions } from './dpop.js';
export { jwtVerifier, type JwtVerifierOptions } from './verify-jwt.js';
export { introspectionVerifier, type IntrospectionVerifierOptions } from './introspection.js';
export { protectedResourceMetadata, protectedResourceMetadataUrl } from './metadata.js';
export { tokenRefused, type RevocationCheck, type TokenDefect, type TokenVerification, type TokenVerifier, type VerifiedToken } from './types.js';
export { revocationFeed, type RevocationFeed, type RevocationFeedOptions } from './revocation-feed.js';
export { honoBearerAuth, honoProtectedResourceMetadata, type AuthVariables } from './adapters/hono.js';
export { nodeBearerAuth, nodeProtectedResourceMetadata, type AuthenticatedRequest } from './adapters/node.js';
export { BodyTooLargeError, DEFAULT_MAX_BODY_BYTES, bodyTooLargeResponse, limitRequestBody, readLimitedBody, readLimitedText } from './body-limit.js';
