import { forwardRequest } from './forward.js';
import type { Upstream } from './upstream.js';
import { HttpUpstreamHealth } from './upstream-health.js';

/** A context server reached over Streamable HTTP at `url`. `nowMs`: the clock of its health's freshness. */
export function httpUpstream(url: string, options: { timeoutMs: number; nowMs?: () => number }): Upstream {
  const target = new URL(url);
  const health = new HttpUpstreamHealth(target, options.nowMs);
  return {
    forward: async (request, authorization) => {
      const forwarded = await forwardRequest(request, target, { timeoutMs: options.timeoutMs, authorization });
      health.forwarded(forwarded.outcome);
      return forwarded;
    },
    health: () => health.state(),
  };
}
