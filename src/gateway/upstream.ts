import type { Forwarded } from './forward.js';
import type { GatewayRequest } from './gateway-request.js';
import type { UpstreamHealth } from './upstream-health.js';

export type { Forwarded } from './forward.js';
export type { GatewayRequest } from './gateway-request.js';
export type { UpstreamHealth } from './upstream-health.js';

/** Where a gateway path sends the requests its guard let through: a server over HTTP, or stdio children. */
export interface Upstream {
  /** `authorization`: what the upstream gets in its Authorization header, if anything (HTTP only). */
  forward(request: GatewayRequest, authorization?: string): Promise<Forwarded>;
  /** What /readyz reports of it (upstream-health.ts). */
  health?(): Promise<UpstreamHealth>;
  /** Sessions running now, where the gateway runs them (stdio: one process each). */
  runningSessions?(): number;
  close?(): Promise<void>;
}
