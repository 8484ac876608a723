import { forwardRequest } from './forward.js';
import type { Upstream } from './upstream.js';

/** A context server reached over Streamable HTTP at `url`. */
export function httpUpstream(url: string, options: { timeoutMs: number }): Upstream {
  const target = new URL(url);
  return { forward: (request, authorization) => forwardRequest(request, target, { timeoutMs: options.timeoutMs, authorization }) };
}
