import type { Hono } from 'hono';
import { cors } from 'hono/cors';
import {
  BodyTooLargeError,
  DEFAULT_MAX_BODY_BYTES,
  bodyTooLargeResponse,
  limitRequestBody,
  type ProtectedResource,
  type VerifiedToken,
} from '../resource-server/index.js';
import { jsonRpcError, sessionNotFound, tooManyRequests } from './gateway-errors.js';
import { forwardOutcome, type GatewayMetrics, type GatewayOutcome } from './gateway-metrics.js';
import { SessionOwners } from './session-owners.js';
import { ToolCallAudit, toolCalls, type GatewayAuditEvent } from './tool-call-audit.js';
import { filterToolList, toolListRequestIds } from './tool-list-filter.js';
import { scopesNeeded, toolAllowed, type ToolPolicy } from './tool-policy.js';
import type { Upstream } from './upstream.js';
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
 * and 403 challenges, bearer and DPoP tokens, this path's audience), then the request goes on
 * with its body capped, and the answer comes back as a stream. Sessions are bound to the person
 * who opened them (session-owners.ts).
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
  app.use(
    path,
    cors({
      origin: '*',
      allowHeaders: ['Authorization', 'DPoP', 'Content-Type', 'Mcp-Protocol-Version', 'Mcp-Method', 'Mcp-Name', 'Mcp-Session-Id', 'Last-Event-ID'],
      exposeHeaders: ['WWW-Authenticate', 'DPoP-Nonce', 'Mcp-Session-Id', 'Mcp-Protocol-Version'],
      allowMethods: ['GET', 'POST', 'DELETE', 'OPTIONS'],
    }),
  );
  app.all(path, async (c) => {
    const request = c.req.raw;
    const checked = await protection.authenticate(request);
    if (!checked.ok) return counted('denied', checked.response);
    const budget = await rateLimit?.(checked.auth.subject);
    if (budget && !budget.allowed) return counted('rate_limited', tooManyRequests(budget.retryAfter));
    const limited = limitRequestBody(request, maxBodyBytes, (c.env as { incoming?: unknown } | undefined)?.incoming);
    if (limited === null) return counted('too_large', bodyTooLargeResponse(maxBodyBytes));
    const owner = ownerOf(checked.auth);
    const sessionId = request.headers.get('mcp-session-id');
    if (sessionId !== null && !sessions.allows(sessionId, owner)) return counted('denied', sessionNotFound());
    let forwarded = limited;
    let toolLists = new Set<unknown>();
    let calls: ReturnType<typeof toolCalls> = [];
    if ((policy || audit) && request.method === 'POST') {
      const read = await readJson(limited);
      if (read instanceof Response) return counted(read.status === 413 ? 'too_large' : 'cancelled', read);
      if (audit) calls = toolCalls(read.body);
      const needed = policy ? scopesNeeded(policy, read.body).filter((scope) => !requiredScopes.includes(scope)) : [];
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
      if (policy?.filterToolList) toolLists = toolListRequestIds(read.body);
      forwarded = new Request(limited.url, { method: 'POST', headers: limited.headers, body: read.text, signal: limited.signal });
    }
    let authorization: string | undefined;
    if (upstreamToken) {
      const obtained = await upstreamToken(checked.auth);
      if (!obtained.ok) return counted('denied', upstreamTokenRefusal(obtained.defect, protection.metadataUrl));
      authorization = `Bearer ${obtained.value.token}`;
    }
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
  });
}

/** A POST's body, read up to its cap, and parsed (undefined when it is not JSON: the upstream answers that). */
async function readJson(request: Request): Promise<{ text: string; body: unknown } | Response> {
  let text: string;
  try {
    text = await request.text();
  } catch (error) {
    const cause = (error as { cause?: unknown }).cause;
    const tooLarge = error instanceof BodyTooLargeError ? error : cause instanceof BodyTooLargeError ? cause : undefined;
    if (tooLarge) return bodyTooLargeResponse(tooLarge.maxBytes);
    return jsonRpcError(400, -32700, 'Parse error: the request body could not be read to its end');
  }
  try {
    return { text, body: JSON.parse(text) as unknown };
  } catch {
    return { text, body: undefined };
  }
}
