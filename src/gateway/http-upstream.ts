import { forwardRequest, upstreamTarget } from './forward.js';
import type { Upstream } from './upstream.js';
import { HttpUpstreamHealth } from './upstream-health.js';

/** A context server reached over Streamable HTTP at `url`. `nowMs`: the clock of its health's freshness. */
export function httpUpstream(url: string, options: { timeoutMs: number; nowMs?: () => number }): Upstream {
  const target = upstreamTarget(new URL(url));
  const health = new HttpUpstreamHealth(target.url, options.nowMs);
  return {
    forward: async (request, authorization) => {
      const forwarded = await forwardRequest(request, target, { timeoutMs: options.timeoutMs, authorization });
      health.forwarded(forwarded.outcome);
      return forwarded;
    },
    health: () => health.state(),
    // The idle connections kept for the next requests.
    close: () => Promise.resolve(target.agent.destroy()),
  };
}
