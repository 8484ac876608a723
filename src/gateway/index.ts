export { mountGateway, type GatewayRouteOptions } from './mount.js';
export type { Upstream, Forwarded, GatewayRequest, UpstreamHealth } from './upstream.js';
export { httpUpstream } from './http-upstream.js';
export { StdioUpstream, type StdioUpstreamOptions } from './stdio-upstream.js';
export { UPSTREAM_TOKEN_SECONDS, type UpstreamTokenResult, type UpstreamTokenSource } from './upstream-token.js';
export { parseGatewaySpec, servedHere, type GatewaySpec } from './gateway-spec.js';
export { parseToolPolicies, type ToolPolicy } from './tool-policy.js';
export { GatewayMetrics, type GatewayOutcome } from './gateway-metrics.js';
export type { GatewayAuditEvent } from './tool-call-audit.js';
