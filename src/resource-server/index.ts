export { protectedResource, toMcpAuthInfo, type ProtectedResource, type ProtectedResourceOptions, type GuardResult, type Denial } from './guard.js';
export { jwtVerifier, type JwtVerifierOptions } from './verify-jwt.js';
export { introspectionVerifier, type IntrospectionVerifierOptions } from './introspection.js';
export { protectedResourceMetadata, protectedResourceMetadataUrl } from './metadata.js';
export { extractBearer } from './bearer.js';
export { InvalidTokenError, VerifierUnavailableError, type TokenVerifier, type VerifiedToken } from './types.js';
export { honoBearerAuth, honoProtectedResourceMetadata, type AuthVariables } from './adapters/hono.js';
export { nodeBearerAuth, nodeProtectedResourceMetadata, type AuthenticatedRequest } from './adapters/node.js';
export { BodyTooLargeError, DEFAULT_MAX_BODY_BYTES, bodyTooLargeResponse, limitRequestBody, readLimitedText } from './body-limit.js';
