import { ServerResponse } from 'node:http';
import type { Hono } from 'hono';
import { cors } from 'hono/cors';
import {
  BodyTooLargeError,
  DEFAULT_MAX_BODY_BYTES,
  bodyTooLargeResponse,
  readLimitedBody,
  type ProtectedResource,
  type VerifiedToken,
} from '../resource-server/index.js';
import { jsonRpcError, sessionNotFound, tooManyRequests } from './gateway-errors.js';
import { forwardOutcome, type GatewayMetrics, type GatewayOutcome } from './gateway-metrics.js';
import { SessionOwners } from './session-owners.js';
import { ToolCallAudit, toolCalls, type GatewayAuditEvent } from './tool-call-audit.js';
import { filterToolList, toolListRequestIds } from './tool-list-filter.js';
import { scopesNeeded, toolAllowed, type ToolPolicy } from './tool-policy.js';
import type { GatewayRequest, Upstream } from './upstream.js';
import { upstreamTokenRefusal, type UpstreamTokenSource } from './upstream-token.js';

/** Sessions remembered per gateway path, and how long an idle one is kept. */
const MAX_SESSIONS = 10_000;
const SESSION_IDLE_MS = 60 * 60 * 1000;

export interface GatewayRouteOptions {
  /** The path this origin serves it at, e.g. `/github`: the resource is the origin plus this path. */
  path: string;
  /** Where the requests go: `httpUpstream(url, …)` or a `StdioUpstream`. */
  upstream: Upstream;
  /** The guard of this path's own resource (its own audience): every request passes it first. */
  protection: ProtectedResource;
  /** Largest request body forwarded (bytes); a larger one is 413. Default 1 MiB. */
  maxBodyBytes?: number;
  /**
   * Give the upstream a short-lived token for its own audience, obtained from the person's
   * verified token (in `serve`, by the authorization server's token exchange); a refusal is the
   * client's answer, and nothing is forwarded. Without it, the upstream gets no Authorization
   * header at all. The person's own token is never forwarded.
   */
  upstreamToken?: UpstreamTokenSource;
  /** Scopes per tool, resource and prompt beyond `requiredScopes` (tool-policy.ts); the body of each POST is read first. */
  policy?: ToolPolicy;
  /** The scopes `protection` requires of every request, named again in a step-up challenge. */
  requiredScopes?: string[];
  /** Prometheus metrics of the path (`new GatewayMetrics(server.metrics)`, one for all paths): requests by outcome, the upstream's answer time, stdio sessions. */
  metrics?: GatewayMetrics;
  /** Where the path's audit events go: one per `tools/call` (tool-call-audit.ts); the body of each POST is read first. */
  audit?: (event: GatewayAuditEvent) => void;
  /** Put each call's arguments in its audit event (cut to 2,000 characters). Default: never. */
  auditArguments?: boolean;
  /**
   * Spends one request of a person's budget at this path (`server.gatewayRateLimit`, bound to the
   * path); past it, the request is answered 429 with Retry-After and goes no further.
   */
  rateLimit?: (subject: string) => Promise<{ allowed: true } | { allowed: false; retryAfter: number }>;
}

/** Who a session belongs to: the person and the client acting for them. */
const ownerOf = (auth: VerifiedToken): string => JSON.stringify([auth.subject, auth.clientId]);

/**
 * Mounts a protected path that forwards to an upstream context server: the guard first (its 401
 * and 403 challenges, bearer and DPoP tokens, this path's audience), then the request, read once
 * with its body capped, goes on, and the answer comes back (an event stream as the upstream writes
 * it). Sessions are bound to the person who opened them (session-owners.ts).
 */
export function mountGateway(app: Hono, options: GatewayRouteOptions): void {
  const { path, protection, upstream, upstreamToken, policy, metrics, rateLimit } = options;
  const requiredScopes = options.requiredScopes ?? [];
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const sessions = new SessionOwners(MAX_SESSIONS, SESSION_IDLE_MS);
  const audit = options.audit ? new ToolCallAudit(options.audit, path, options.auditArguments ?? false) : undefined;
  if (metrics && upstream.runningSessions) metrics.watchSessions(path, () => upstream.runningSessions!());
  const counted = (outcome: GatewayOutcome, response: Response): Response => {
    metrics?.request(path, outcome);
    return response;
  };

  app.get(new URL(protection.metadataUrl).pathname, () => protection.metadataResponse());
  // The preflight. Every other answer gets its CORS headers from the route (withCors): as a
  // middleware, Hono's cors would have each answer rebuilt, its body a stream, to add them.
  app.options(
    path,
    cors({ origin: '*', allowHeaders: [...ALLOWED_HEADERS], exposeHeaders: [...EXPOSED_HEADERS], allowMethods: ['GET', 'POST', 'DELETE', 'OPTIONS'] }),
  );
  app.all(path, async (c) => withCors(await handle(c.req.raw, c.env as { incoming?: unknown; outgoing?: unknown } | undefined)));

  /** The request, through the guard, the cap and the policy, to the upstream: its answer, or the refusal. */
  async function handle(request: Request, env: { incoming?: unknown; outgoing?: unknown } | undefined): Promise<Response> {
    const checked = await protection.authenticate(request);
    if (!checked.ok) return counted('denied', checked.response);
    const budget = await rateLimit?.(checked.auth.subject);
    if (budget && !budget.allowed) return counted('rate_limited', tooManyRequests(budget.retryAfter));
    if (Number(request.headers.get('content-length')) > maxBodyBytes) return counted('too_large', bodyTooLargeResponse(maxBodyBytes));
    const owner = ownerOf(checked.auth);
    const sessionId = request.headers.get('mcp-session-id');
    if (sessionId !== null && !sessions.allows(sessionId, owner)) return counted('denied', sessionNotFound());
    let body: Uint8Array | undefined;
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      const read = await readBody(request, maxBodyBytes, env?.incoming);
      if (!read.ok) return counted(read.response.status === 413 ? 'too_large' : 'cancelled', read.response);
      body = read.body;
    }
    let toolLists = new Set<unknown>();
    let calls: ReturnType<typeof toolCalls> = [];
    if ((policy || audit) && request.method === 'POST') {
      const message = policy || mayCallTools(body!) ? parseJson(body!) : undefined;
      if (audit) calls = toolCalls(message);
      const needed = policy ? scopesNeeded(policy, message).filter((scope) => !requiredScopes.includes(scope)) : [];
      if (needed.length > 0) {
        // The same request: a DPoP proof the first check took is taken again, not refused as replayed.
        const stepUp = await protection.authenticate(request, [...requiredScopes, ...needed]);
        if (!stepUp.ok) {
          audit?.refused(
            checked.auth,
            calls,
            stepUp.response.status,
            needed.filter((scope) => !checked.auth.scopes.includes(scope)),
          );
          return counted('denied', stepUp.response);
        }
      }
      if (policy?.filterToolList) toolLists = toolListRequestIds(message);
    }
    let authorization: string | undefined;
    if (upstreamToken) {
      const obtained = await upstreamToken(checked.auth);
      if (!obtained.ok) return counted('denied', upstreamTokenRefusal(obtained.defect, protection.metadataUrl));
      authorization = `Bearer ${obtained.value.token}`;
    }
    const forwarded: GatewayRequest = {
      method: request.method,
      url: request.url,
      headers: request.headers,
      body,
      whenGone: goneWatcher(request, env?.outgoing),
    };
    const started = performance.now();
    const { response: answer, outcome } = await upstream.forward(forwarded, authorization);
    if (outcome.kind === 'answered') metrics?.answered(path, (performance.now() - started) / 1000);
    audit?.forwarded(checked.auth, calls, outcome, answer.status);
    const response = policy?.filterToolList ? filterToolList(answer, toolLists, (name) => toolAllowed(policy, name, checked.auth.scopes)) : answer;
    if (outcome.kind === 'answered') {
      if (sessionId === null && outcome.sessionId !== null && outcome.status < 300) sessions.opened(outcome.sessionId, owner);
      // Ended by the client, or unknown to the upstream (it restarted): either way, gone.
      if (sessionId !== null && ((request.method === 'DELETE' && outcome.status < 300) || outcome.status === 404)) sessions.closed(sessionId);
    }
    if (checked.headers) for (const [name, value] of Object.entries(checked.headers)) response.headers.set(name, value);
    return counted(forwardOutcome(outcome), response);
  }
}

/** What a browser client may send, and read of the answers. */
const ALLOWED_HEADERS = ['Authorization', 'DPoP', 'Content-Type', 'Mcp-Protocol-Version', 'Mcp-Method', 'Mcp-Name', 'Mcp-Session-Id', 'Last-Event-ID'] as const;
const EXPOSED_HEADERS = ['WWW-Authenticate', 'DPoP-Nonce', 'Mcp-Session-Id', 'Mcp-Protocol-Version'] as const;
const EXPOSED = EXPOSED_HEADERS.join(',');

/** The CORS headers of an answer to a request that is not a preflight, as Hono's cors gives them for any origin. */
function withCors(response: Response): Response {
  response.headers.set('Access-Control-Allow-Origin', '*');
  response.headers.set('Access-Control-Expose-Headers', EXPOSED);
  return response;
}

/**
 * How the upstream request learns that the client went away: under a Node listener, the Node
 * response's close before its end (no Web Request's signal is made for it); elsewhere, the
 * request's signal.
 */
function goneWatcher(request: Request, outgoing: unknown): GatewayRequest['whenGone'] {
  if (outgoing instanceof ServerResponse) {
    return (listener) => {
      if (outgoing.destroyed) {
        listener();
        return () => {};
      }
      // 'close' comes after a complete answer too: only one before its end is the client leaving.
      const closed = (): void => {
        if (!outgoing.writableFinished) listener();
      };
      outgoing.once('close', closed);
      return () => outgoing.off('close', closed);
    };
  }
  return (listener) => {
    const signal = request.signal;
    if (signal.aborted) {
      listener();
      return () => {};
    }
    signal.addEventListener('abort', listener, { once: true });
    return () => signal.removeEventListener('abort', listener);
  };
}

/**
 * A request's body, read up to its cap; the answer to give instead when it cannot be had. Not told
 * apart by `instanceof Response`: the Node adapter of Hono replaces the global Response.
 */
async function readBody(request: Request, maxBytes: number, incoming: unknown): Promise<{ ok: true; body: Uint8Array } | { ok: false; response: Response }> {
  try {
    return { ok: true, body: await readLimitedBody(request, maxBytes, incoming) };
  } catch (error) {
    if (error instanceof BodyTooLargeError) return { ok: false, response: bodyTooLargeResponse(error.maxBytes) };
    return { ok: false, response: jsonRpcError(400, -32700, 'Parse error: the request body could not be read to its end') };
  }
}

const utf8 = new TextDecoder();
const TOOLS_CALL = Buffer.from('tools/call');
const BACKSLASH = 0x5c;

/**
 * Whether a body may hold a tools/call, the one method the audit reads: only then is it parsed
 * for it. JSON spells "tools/call" with those bytes, or with an escape (`tools\/call`,
 * `tools\u002fcall`), which a backslash begins.
 */
function mayCallTools(body: Uint8Array): boolean {
  // A search for bytes: a string needle would be encoded again at each call.
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  return bytes.indexOf(TOOLS_CALL) >= 0 || bytes.indexOf(BACKSLASH) >= 0;
}

/** A POST's body parsed (undefined when it is not JSON: the upstream answers that). */
function parseJson(body: Uint8Array): unknown {
  try {
    return JSON.parse(utf8.decode(body)) as unknown;
  } catch {
    return undefined;
  }
}
