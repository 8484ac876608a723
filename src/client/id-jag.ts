/**
 * Enterprise-managed authorization: the person's own identity provider (IdP) decides which
 * context servers they may use. The client exchanges the ID token it got when the person signed
 * in to the IdP for an Identity Assertion JWT Authorization Grant (ID-JAG) by OAuth token
 * exchange (RFC 8693) at the IdP, and presents the ID-JAG to the context server's authorization
 * server in the jwt-bearer grant. No browser is involved at the context server.
 */
import * as oauth from 'oauth4webapi';
import { ID_JAG_TOKEN_TYPE, ID_TOKEN_TYPE, TOKEN_EXCHANGE_GRANT_TYPE } from '../core/id-jag.js';
import { ClientError } from './errors.js';
import { fetchAuthorizationServerMetadata } from './discovery.js';
import { assertSecureUrl } from './http.js';
import type { AssertionContext } from './jwt-bearer.js';
import { failureReason } from './network-errors.js';
import { clientSecretBasic, requestOptions } from './oauth-requests.js';

/** Where the IdP's token endpoint is: its issuer (the endpoint read from its metadata), or the endpoint itself. */
export type IdentityProvider = { issuer: string; tokenEndpoint?: undefined } | { tokenEndpoint: string; issuer?: undefined };

/** The client at the IdP: its client id there, and its secret if it is a confidential client. */
export interface IdpClient {
  clientId: string;
  clientSecret?: string;
  fetch?: typeof fetch;
}

export type IdJagRequest = IdentityProvider &
  IdpClient & {
    /** The ID token the IdP issued to this client when the person signed in. */
    idToken: string;
    /** The context server's authorization server (its issuer): the ID-JAG is for it alone. */
    audience: string;
    /** The context server's resource identifier. */
    resource: string;
    scope?: string;
  };

function failed(idp: string, why: string, cause?: unknown): ClientError {
  return new ClientError('assertion_unavailable', `the token exchange at ${idp} failed: ${why}`, cause === undefined ? undefined : { cause });
}

/** The IdP as oauth4webapi wants it: read from its metadata, or made up around the token endpoint given. */
async function identityProvider(idp: IdentityProvider, fetchImpl: typeof fetch): Promise<oauth.AuthorizationServer> {
  if (idp.tokenEndpoint !== undefined) {
    assertSecureUrl(idp.tokenEndpoint, "the identity provider's token endpoint");
    return { issuer: new URL(idp.tokenEndpoint).origin, token_endpoint: idp.tokenEndpoint };
  }
  assertSecureUrl(idp.issuer, 'the identity provider');
  const metadata = await fetchAuthorizationServerMetadata(fetchImpl, idp.issuer);
  if (!metadata) throw failed(idp.issuer, 'it publishes no authorization server or OpenID metadata');
  if (typeof metadata.token_endpoint !== 'string') throw failed(idp.issuer, 'its metadata names no token_endpoint');
  assertSecureUrl(metadata.token_endpoint, "the identity provider's token endpoint");
  return metadata;
}

/** client_secret_basic unless the IdP lists only client_secret_post; no secret: the client id alone. */
function idpAuthentication(as: oauth.AuthorizationServer, client: IdpClient): oauth.ClientAuth {
  if (!client.clientSecret) return oauth.None();
  const methods = as.token_endpoint_auth_methods_supported;
  const postOnly = Array.isArray(methods) && !methods.includes('client_secret_basic') && methods.includes('client_secret_post');
  return postOnly ? oauth.ClientSecretPost(client.clientSecret) : clientSecretBasic(client.clientId, client.clientSecret);
}

async function exchange(as: oauth.AuthorizationServer, request: IdJagRequest, fetchImpl: typeof fetch): Promise<string> {
  const where = request.issuer ?? as.token_endpoint!;
  const parameters: Record<string, string> = {
    requested_token_type: ID_JAG_TOKEN_TYPE,
    subject_token: request.idToken,
    subject_token_type: ID_TOKEN_TYPE,
    audience: request.audience,
    resource: request.resource,
    ...(request.scope ? { scope: request.scope } : {}),
  };
  let response: Response;
  try {
    response = await oauth.genericTokenEndpointRequest(
      as,
      { client_id: request.clientId },
      idpAuthentication(as, request),
      TOKEN_EXCHANGE_GRANT_TYPE,
      parameters,
      requestOptions(fetchImpl, as.token_endpoint!),
    );
  } catch (error) {
    throw failed(where, failureReason(error), error);
  }
  const body = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
  if (!response.ok) {
    const code = typeof body?.error === 'string' ? body.error : `HTTP ${response.status}`;
    const description = typeof body?.error_description === 'string' ? ` (${body.error_description})` : '';
    throw failed(where, `${code}${description}`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw failed(where, 'the answer is not a JSON object');
  // RFC 8693 §2.2.1: the answer says what it issued; anything but an ID-JAG (say an access token
  // for the IdP itself) must not be presented to the context server's authorization server.
  if (body.issued_token_type !== ID_JAG_TOKEN_TYPE) {
    throw failed(
      where,
      `it issued ${typeof body.issued_token_type === 'string' ? body.issued_token_type : 'no issued_token_type'}, not an ID-JAG (${ID_JAG_TOKEN_TYPE})`,
    );
  }
  const jag = body.access_token;
  if (typeof jag !== 'string' || jag.split('.').length !== 3) throw failed(where, 'the answer has no ID-JAG (a JWT in access_token)');
  return jag;
}

/**
 * Exchanges the person's ID token for an ID-JAG at their identity provider (RFC 8693 token
 * exchange, requested_token_type id-jag), for one authorization server (`audience`) and one
 * resource. Every failure is an `assertion_unavailable` ClientError naming the IdP's reason.
 */
export async function requestIdJag(request: IdJagRequest): Promise<string> {
  const fetchImpl = request.fetch ?? fetch;
  return exchange(await identityProvider(request, fetchImpl), request, fetchImpl);
}

export type EnterpriseAssertionOptions = IdentityProvider &
  IdpClient & {
    /** The ID token, or (for one that is renewed) how to get the current one. */
    idToken: string | (() => string | Promise<string>);
  };

/**
 * An `assertion` for ContextClient's jwt-bearer grant: a fresh ID-JAG from the identity provider
 * for each token request, made for the authorization server and resource the client is about to
 * ask. The IdP's metadata is read once.
 */
export function enterpriseAssertion(options: EnterpriseAssertionOptions): (context: AssertionContext) => Promise<string> {
  const fetchImpl = options.fetch ?? fetch;
  let idp: Promise<oauth.AuthorizationServer> | undefined;
  return async (context: AssertionContext) => {
    // A failed look-up is forgotten, so the next token request tries again.
    const metadata = (idp ??= identityProvider(options, fetchImpl));
    metadata.catch(() => {
      if (idp === metadata) idp = undefined;
    });
    const idToken = typeof options.idToken === 'string' ? options.idToken : await options.idToken();
    const request = {
      ...options,
      idToken,
      audience: context.issuer,
      resource: context.resource,
      ...(context.scope ? { scope: context.scope } : {}),
    } as IdJagRequest;
    return exchange(await metadata, request, fetchImpl);
  };
}
