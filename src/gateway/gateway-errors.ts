/**
 * The gateway's own answers, in the OAuth-style JSON the guard answers with: the upstream could
 * not be reached or answered badly (502), or did not answer in time (504). The description never
 * carries what the upstream said: it is for the person's client, the details are the operator's.
 */
export type GatewayFailure = 'bad_gateway' | 'gateway_timeout';

const STATUS: Record<GatewayFailure, 502 | 504> = { bad_gateway: 502, gateway_timeout: 504 };

export function gatewayFailure(failure: GatewayFailure, description: string): Response {
  return Response.json({ error: failure, error_description: description }, { status: STATUS[failure], headers: { 'Cache-Control': 'no-store' } });
}

/** A JSON-RPC error with no id, as MCP servers answer a request they cannot take. */
export function jsonRpcError(status: number, code: number, message: string): Response {
  return Response.json({ jsonrpc: '2.0', id: null, error: { code, message } }, { status, headers: { 'Cache-Control': 'no-store' } });
}

/** The answer MCP clients take as "this session is gone: start another". */
export const sessionNotFound = (): Response => jsonRpcError(404, -32001, 'Session not found');

/**
 * Past a person's rate limit at a gateway path: 429 with Retry-After, and a JSON-RPC error an MCP
 * client shows as it is (no id: the body is not read for a request refused this early).
 */
export function tooManyRequests(retryAfter: number): Response {
  const wait = `${retryAfter} second${retryAfter === 1 ? '' : 's'}`;
  const response = jsonRpcError(429, -32000, `Too many requests: retry after ${wait}`);
  response.headers.set('Retry-After', String(retryAfter));
  return response;
}
