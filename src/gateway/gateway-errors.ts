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
