import { OAuthError } from '../../core/errors.js';
import { safeEqual } from '../../core/secrets.js';
import { respond, type Answer } from '../http/responses.js';
import type { ServerMetrics } from '../metrics/metrics.js';
import type { EndpointRequest } from '../http/request.js';

/**
 * GET /metrics: the Prometheus text exposition. With a token (the bearer token scrapers must
 * send), to whoever sends it; without one (null), to this machine only.
 */
export async function metricsEndpoint(metrics: ServerMetrics, token: string | null, request: EndpointRequest): Promise<Answer> {
  checkMetricsAccess(token, request);
  return respond(await metrics.text(), 200, { 'Content-Type': metrics.registry.contentType, 'Cache-Control': 'no-store' });
}

export function checkMetricsAccess(token: string | null, request: EndpointRequest): void {
  if (token !== null) {
    const header = request.headers.authorization;
    const match = header === null ? null : /^Bearer ([^\s]+)$/i.exec(header);
    if (!match) throw new OAuthError('invalid_token', 'metrics need Authorization: Bearer <the metrics token>', 401, { 'WWW-Authenticate': 'Bearer' });
    if (!safeEqual(match[1]!, token)) throw new OAuthError('invalid_token', 'wrong metrics token', 401, { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
    return;
  }
  // A request a proxy forwarded comes from wherever the proxy's client is, even when the proxy is on this machine.
  const forwarded = request.headers.forwarded !== null || request.headers.xForwardedFor !== null;
  // The socket's peer, never X-Forwarded-For: a local proxy would make everyone local.
  const peer = request.peerAddress;
  if (forwarded || peer === undefined || !isLoopbackAddress(peer)) {
    throw new OAuthError('access_denied', 'metrics are served only to this machine unless a metrics token is set', 403);
  }
}

/** 127.0.0.0/8 and ::1, also as IPv4-mapped IPv6 (how a dual-stack socket reports an IPv4 peer). */
export function isLoopbackAddress(address: string): boolean {
  const ipv4 = address.toLowerCase().startsWith('::ffff:') ? address.slice(7) : address;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(ipv4) || address === '::1' || address === '0:0:0:0:0:0:0:1';
}
