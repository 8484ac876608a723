import { BodyTooLargeError, bodyTooLargeResponse } from '../resource-server/index.js';
import { gatewayFailure } from './gateway-errors.js';
import { clientResponseHeaders, upstreamRequestHeaders } from './upstream-headers.js';

export interface ForwardOptions {
  /** How long the upstream may take to answer with its status and headers; past it, 504. */
  timeoutMs: number;
  /** The Authorization header the upstream gets (a token of ours for it), or none. */
  authorization?: string | undefined;
}

/** What the upstream answered, for the caller's bookkeeping (sessions, metrics). */
export interface Forwarded {
  response: Response;
  /** The upstream's status, or the gateway's own failure. */
  outcome:
    | { kind: 'answered'; status: number; sessionId: string | null }
    | { kind: 'failed'; failure: 'unreachable' | 'timeout' | 'refused' | 'body_too_large' | 'cancelled' };
}

// Statuses whose answer has no body: a Response built with one throws.
const NULL_BODY = new Set([101, 204, 205, 304]);

/**
 * Sends the request on to `target` and hands back the upstream's answer as a stream: an
 * event stream reaches the client event by event, as the upstream writes it. The request body,
 * capped by the caller, is read first. The timeout covers the wait for the answer's
 * headers, not a stream that then stays open; the client going away cancels the upstream request.
 */
export async function forwardRequest(request: Request, target: URL, options: ForwardOptions): Promise<Forwarded> {
  const search = new URL(request.url).search;
  const url = search === '' ? target : new URL(`${target.origin}${target.pathname}${search}`);
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), options.timeoutMs);
  const signal = AbortSignal.any([timeout.signal, request.signal]);
  let upstream: Response;
  try {
    // Read whole (the caller capped it) and sent with its length: JSON-RPC messages are small.
    const body = request.body !== null && request.method !== 'GET' && request.method !== 'HEAD' ? await request.arrayBuffer() : undefined;
    upstream = await fetch(url, {
      method: request.method,
      headers: upstreamRequestHeaders(request.headers, options.authorization),
      ...(body === undefined ? {} : { body }),
      // A redirect would send the request to where the operator did not say.
      redirect: 'manual',
      signal,
    });
  } catch (error) {
    const tooLarge = bodyTooLarge(error);
    if (tooLarge) return { response: bodyTooLargeResponse(tooLarge.maxBytes), outcome: { kind: 'failed', failure: 'body_too_large' } };
    if (timeout.signal.aborted) {
      return {
        response: gatewayFailure('gateway_timeout', 'the upstream context server did not answer in time'),
        outcome: { kind: 'failed', failure: 'timeout' },
      };
    }
    // The client went away first: nothing is said of the upstream, and nobody reads the answer.
    if (request.signal.aborted)
      return { response: gatewayFailure('bad_gateway', 'the request was cancelled'), outcome: { kind: 'failed', failure: 'cancelled' } };
    return { response: gatewayFailure('bad_gateway', 'the upstream context server could not be reached'), outcome: { kind: 'failed', failure: 'unreachable' } };
  } finally {
    clearTimeout(timer);
  }
  // A 401 from the upstream is about our credentials for it, not the person's: passed on, it
  // would send the client to authorize again, here, for nothing. A redirect is not followed.
  if (upstream.status === 401 || upstream.status === 407 || (upstream.status >= 300 && upstream.status < 400)) {
    await upstream.body?.cancel().catch(() => {});
    return { response: gatewayFailure('bad_gateway', 'the upstream context server refused the gateway'), outcome: { kind: 'failed', failure: 'refused' } };
  }
  const body = NULL_BODY.has(upstream.status) || request.method === 'HEAD' ? null : upstream.body;
  return {
    response: new Response(body, { status: upstream.status, headers: clientResponseHeaders(upstream.headers) }),
    outcome: { kind: 'answered', status: upstream.status, sessionId: upstream.headers.get('mcp-session-id') },
  };
}

/** The cap's error: fetch wraps a request body stream's error in a TypeError whose cause is ours. */
function bodyTooLarge(error: unknown): BodyTooLargeError | undefined {
  if (error instanceof BodyTooLargeError) return error;
  const cause = (error as { cause?: unknown } | null)?.cause;
  return cause instanceof BodyTooLargeError ? cause : undefined;
}
