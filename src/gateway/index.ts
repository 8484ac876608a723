export { mountGateway, type GatewayRouteOptions } from './mount.js';
export type { Upstream, Forwarded } from './upstream.js';
export { httpUpstream } from './http-upstream.js';
export { StdioUpstream, type StdioUpstreamOptions } from './stdio-upstream.js';
export { UPSTREAM_TOKEN_SECONDS, type UpstreamTokenResult, type UpstreamTokenSource } from './upstream-token.js';
export { parseGatewaySpec, type GatewaySpec } from './gateway-spec.js';
export { parseToolPolicies, type ToolPolicy } from './tool-policy.js';
