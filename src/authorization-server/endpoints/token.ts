import { OAuthError } from '../../core/errors.js';
import { TOKEN_EXCHANGE_GRANT_TYPE } from '../../core/id-jag.js';
import { DEVICE_CODE_GRANT_TYPE, JWT_BEARER_GRANT_TYPE } from '../../core/protocol.js';
import { hasRefreshWithAssertion } from '../../store/capabilities.js';
import type { ClientRecord } from '../../store/store.js';
import { authenticateClient, claimedClientId } from '../checks/authenticate-client.js';
import type { ServerContext } from '../context.js';
import { requiresDpop } from '../dpop.js';
import { exchangeAuthorizationCode } from '../grants/authorization-code.js';
import { clientCredentialsGrant } from '../grants/client-credentials.js';
import { deviceCodeGrant } from '../grants/device-code.js';
import { jwtBearerGrant } from '../grants/jwt-bearer.js';
import { refreshAccessToken } from '../grants/refresh-token.js';
import { tokenExchangeGrant } from '../grants/token-exchange.js';
import type { TokenRequest } from '../grants/token-request.js';
import { toOAuthError } from '../http/errors.js';
import { readForm, type Params } from '../http/params.js';
import { json, type Answer } from '../http/responses.js';
import type { EndpointRequest } from '../http/request.js';

const grants = {
  authorization_code: exchangeAuthorizationCode,
  refresh_token: refreshAccessToken,
  client_credentials: clientCredentialsGrant,
  [DEVICE_CODE_GRANT_TYPE]: deviceCodeGrant,
  [TOKEN_EXCHANGE_GRANT_TYPE]: tokenExchangeGrant,
} as const;

/**
 * POST /token: ask for a DPoP nonce if one is required and the proof has none (before anything is
 * done or spent), authenticate the client, then check the proof if one came and spend it, then
 * run the one grant it asked for with the server's services and this request's value (its client,
 * parameters, the proof's key when there was one, address and instant): the grant's tokens are
 * bound to that key.
 */
export async function tokenEndpoint(ctx: ServerContext, request: EndpointRequest): Promise<Answer> {
  const metrics = ctx.metrics;
  // Measured from the endpoint's start (the body was read at the edge); counted by grant type and outcome.
  const started = metrics ? performance.now() : 0;
  let params: Params | undefined;
  try {
    params = readForm(request, ctx.config.maxBodyBytes);
    const response = await answer(ctx, request, params);
    metrics?.tokenRequest(params.get('grant_type'), undefined, started);
    return response;
  } catch (thrown) {
    // Translated here rather than by the route: the refusal's log line and metrics need its code.
    const error = toOAuthError(thrown, ctx.log);
    metrics?.tokenRequest(params?.get('grant_type'), error.code, started);
    logRefusal(ctx, request, params, error);
    throw error;
  }
}

/** Answers that ask the client to wait or to send its request again, not refusals. */
const NOT_REFUSALS: ReadonlySet<string> = new Set(['authorization_pending', 'slow_down', 'use_dpop_nonce']);

/**
 * One token_refused event per refused request: the grant type (a supported one, else "other"),
 * the OAuth error and its description, and the client the request named (authenticated or not),
 * never a credential. The token route's rate limit bounds how many requests, and so events, an
 * address causes. Failures of ours (5xx) are logged as what they are, elsewhere.
 */
function logRefusal(ctx: ServerContext, request: EndpointRequest, params: Params | undefined, error: OAuthError): void {
  if (error.status >= 500 || NOT_REFUSALS.has(error.code)) return;
  const grantType = params?.get('grant_type');
  const clientId = params && claimedClientId(request, params);
  ctx.log({
    event: 'token_refused',
    grant_type: grantType === undefined ? undefined : Object.hasOwn(grants, grantType) || grantType === JWT_BEARER_GRANT_TYPE ? grantType : 'other',
    error: error.code,
    reason: error.description,
    ...(clientId === undefined ? {} : { client_id: clientId }),
  });
}

async function answer(ctx: ServerContext, request: EndpointRequest, params: Params): Promise<Answer> {
  const grantType = params.get('grant_type');
  if (!grantType) throw new OAuthError('invalid_request', 'grant_type is required');
  const dpop = request.headers.dpop;
  await ctx.dpop.askForNonce(dpop, ctx.now());
  // A workload's token authenticates it (RFC 7521 §4.1): that grant may come with no client at all.
  const anonymous = grantType === JWT_BEARER_GRANT_TYPE && !namesClient(request, params);
  const client = anonymous ? null : await authenticateClient(ctx, request, params);
  const noting = client && ctx.clientUse.note(ctx.store, client.clientId, ctx.now());
  if (noting) await noting;
  // Only now is the proof checked and spent: a request that fails to authenticate its client
  // costs no signature check and leaves no record of its proof.
  const proof = await ctx.dpop.check(dpop, ctx.now());
  if (!proof && requiresDpop(client)) throw new OAuthError('invalid_dpop_proof', 'this client is registered with dpop_bound_access_tokens: send a DPoP proof');
  // Spent before the grant, so a replayed request is refused before it spends a code or a refresh
  // token. With no client, the grant spends it once it has verified the workload's token. A
  // refresh spends it in the store's transaction that rotates the token, where the store can
  // (grants/refresh-token.ts): one commit, not two.
  const spentByGrant = grantType === 'refresh_token' && hasRefreshWithAssertion(ctx.store);
  if (proof && client && !spentByGrant) await proof.spend();
  const tokenRequest: TokenRequest<ClientRecord | null> = {
    client,
    params,
    dpopKey: proof ? { ...proof, bindsRefreshTokens: client?.tokenEndpointAuthMethod === 'none' } : undefined,
    address: request.clientAddress,
    now: ctx.now(),
  };
  let body: unknown;
  if (grantType === JWT_BEARER_GRANT_TYPE) {
    body = await jwtBearerGrant(ctx, tokenRequest);
  } else {
    if (!client) throw new OAuthError('invalid_client', 'client authentication is required', 401);
    // The device grant only where the store keeps device authorizations (config.deviceGrant).
    if (!Object.hasOwn(grants, grantType) || (grantType === DEVICE_CODE_GRANT_TYPE && !ctx.config.deviceGrant)) {
      throw new OAuthError('unsupported_grant_type', `grant_type ${grantType} is not supported`);
    }
    body = await grants[grantType as keyof typeof grants](ctx, { ...tokenRequest, client }).catch(async (refused: unknown) => {
      // A grant refused before its store call still spends the proof: none is used twice.
      if (proof && spentByGrant) await proof.spend();
      throw refused;
    });
  }
  // Whatever path the grant took, no answer goes out with its proof unspent.
  if (proof) await proof.spend();
  // With nonces on, each answer gives the nonce for the client's next proof.
  return ctx.dpop.nonceRequired ? json(body, 200, await ctx.dpop.nonceHeader(ctx.now())) : json(body);
}

/** Whether the request says who its client is, in any way client authentication reads. */
function namesClient(request: EndpointRequest, params: Params): boolean {
  return request.headers.authorization !== null || ['client_id', 'client_secret', 'client_assertion', 'client_assertion_type'].some((name) => params.has(name));
}
