import { OAuthError } from '../../core/errors.js';
import { hashSecret, safeEqual } from '../../core/secrets.js';
import { describeDropped, validateClientMetadata } from '../checks/client-metadata.js';
import { registerClient, registrationResponse } from '../clients.js';
import type { BaseServices } from '../services.js';
import type { ClientKeys } from '../assertions/client-keys.js';
import { readJsonObject } from '../http/params.js';
import { json, type Answer } from '../http/responses.js';
import type { EndpointRequest } from '../http/request.js';

/** The operator's gate on registration: open, closed, or an initial access token (RFC 7591 §3). */
function checkRegistrationAllowed(ctx: BaseServices & { clientKeys: ClientKeys }, request: EndpointRequest): void {
  const policy = ctx.config.registration;
  if (policy === 'open') return;
  if (policy === 'closed') throw new OAuthError('access_denied', 'dynamic client registration is turned off on this server', 403);
  const header = request.headers.authorization ?? '';
  const presented = /^bearer /i.test(header) ? header.slice(7).trim() : '';
  if (!presented || !safeEqual(hashSecret(presented), hashSecret(policy.initialAccessToken))) {
    throw new OAuthError('invalid_token', 'registration requires a valid initial access token', 401, {
      'WWW-Authenticate': 'Bearer error="invalid_token"',
    });
  }
}

/** POST /register (RFC 7591): validated metadata in, client id (and a secret, once) out. */
export async function registerEndpoint(ctx: BaseServices & { clientKeys: ClientKeys }, request: EndpointRequest): Promise<Answer> {
  checkRegistrationAllowed(ctx, request);
  const body = readJsonObject(request, ctx.config.maxBodyBytes, 'invalid_client_metadata');
  const metadata = validateClientMetadata(body, ctx.config.scopesSupported, {
    allowLoopbackJwksUri: ctx.clientKeys.allowLoopbackHttp,
    redirectUriRules: ctx.config.redirectUriRules,
    // A client_credentials client gets tokens with no user involved: with open registration that
    // would hand anyone on the network a token for the context server. Only an operator (the CLI,
    // or registration behind an initial access token) may create one.
    ...(ctx.config.registration === 'open'
      ? { clientCredentialsRefusal: 'client_credentials clients are created by an operator (context-auth clients add), not by open registration' }
      : {}),
    ...(ctx.config.deviceGrant ? {} : { deviceCodeRefusal: 'this server does not serve the device grant (its store keeps no device authorizations)' }),
  });
  const registered = await registerClient(ctx.store, metadata, ctx.now(), { registeredBy: 'dynamic' });
  ctx.log({ event: 'client_registered', client_id: registered.client.clientId, method: metadata.tokenEndpointAuthMethod });
  // The response lists what was kept (RFC 7591 §3.2.1); the log says what was not, and why.
  if (metadata.dropped.length > 0) {
    ctx.log({ event: 'client_metadata_trimmed', client_id: registered.client.clientId, registered_by: 'dynamic', dropped: describeDropped(metadata.dropped) });
  }
  return json(registrationResponse(registered), 201);
}
