import { OAuthError } from '../../core/errors.js';
import { safeEqual } from '../../core/secrets.js';
import { requestHeader } from '../http/body.js';
import { respond } from '../http/responses.js';
import type { ServerMetrics } from '../metrics/metrics.js';

/** Who may read /metrics: with a token, whoever sends it; without one, this machine only. */
export interface MetricsAccess {
  /** The bearer token scrapers must send; null serves loopback peers only. */
  token: string | null;
  /** The socket's peer address (never X-Forwarded-For: a local proxy would make everyone local). */
  peer: (request: Request) => string | undefined;
}

/** GET /metrics: the Prometheus text exposition, once the caller passes `access`. */
export async function metricsEndpoint(metrics: ServerMetrics, access: MetricsAccess, request: Request): Promise<Response> {
  checkMetricsAccess(access, request);
  return respond(await metrics.text(), 200, { 'Content-Type': metrics.registry.contentType, 'Cache-Control': 'no-store' });
}

export function checkMetricsAccess(access: MetricsAccess, request: Request): void {
  if (access.token !== null) {
    const header = requestHeader(request, 'authorization');
    const match = header === null ? null : /^Bearer ([^\s]+)$/i.exec(header);
    if (!match) throw new OAuthError('invalid_token', 'metrics need Authorization: Bearer <the metrics token>', 401, { 'WWW-Authenticate': 'Bearer' });
    if (!safeEqual(match[1]!, access.token)) throw new OAuthError('invalid_token', 'wrong metrics token', 401, { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
    return;
  }
  // A request a proxy forwarded comes from wherever the proxy's client is, even when the proxy is on this machine.
  const forwarded = requestHeader(request, 'forwarded') !== null || requestHeader(request, 'x-forwarded-for') !== null;
  const peer = access.peer(request);
  if (forwarded || peer === undefined || !isLoopbackAddress(peer)) {
    throw new OAuthError('access_denied', 'metrics are served only to this machine unless a metrics token is set', 403);
  }
}

/** 127.0.0.0/8 and ::1, also as IPv4-mapped IPv6 (how a dual-stack socket reports an IPv4 peer). */
export function isLoopbackAddress(address: string): boolean {
  const ipv4 = address.toLowerCase().startsWith('::ffff:') ? address.slice(7) : address;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(ipv4) || address === '::1' || address === '0:0:0:0:0:0:0:1';
}
