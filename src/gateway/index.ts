export { mountGateway, type GatewayRouteOptions } from './mount.js';
export type { Upstream, Forwarded } from './upstream.js';
export { httpUpstream } from './http-upstream.js';
export { StdioUpstream, type StdioUpstreamOptions } from './stdio-upstream.js';
export { forwardRequest, type ForwardOptions } from './forward.js';
export { upstreamTokenClaims, UPSTREAM_TOKEN_SECONDS, type ClaimsSigner } from './upstream-token.js';
export { SessionOwners } from './session-owners.js';
export { parseGatewaySpec, type GatewaySpec } from './gateway-spec.js';
export { parseToolPolicies, scopesNeeded, toolAllowed, type ToolPolicy } from './tool-policy.js';
