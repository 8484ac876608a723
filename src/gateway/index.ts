export { mountGateway, DEFAULT_UPSTREAM_TIMEOUT_MS, type GatewayRouteOptions } from './mount.js';
export { forwardRequest, type ForwardOptions, type Forwarded } from './forward.js';
export { upstreamTokenClaims, UPSTREAM_TOKEN_SECONDS, type ClaimsSigner } from './upstream-token.js';
export { SessionOwners } from './session-owners.js';
export { parseGatewaySpec, type GatewaySpec } from './gateway-spec.js';
