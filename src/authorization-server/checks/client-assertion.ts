import { OAuthError } from '../../core/errors.js';
import { isStorableText } from '../../core/storable-text.js';
import type { ClientRecord } from '../../store/store.js';
import { AssertionDefect, readAssertion, spendAssertion, verifyAssertion, type AssertionRules } from '../assertions/verify-assertion.js';
import type { ClientLookup } from '../clients.js';
import type { ClientAssertionAudience } from '../config.js';
import type { ServerContext } from '../context.js';
import { ENDPOINT_PATHS } from '../endpoints/metadata.js';
import type { Params } from '../http/params.js';

export const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const NAME = 'client assertion';
/**
 * A client signs an assertion just before it sends it: five minutes from now (and from its iat)
 * is the longest life accepted, which also bounds how long its jti is remembered.
 */
export const CLIENT_ASSERTION_MAX_LIFETIME = 300;
/** Clock difference allowed between the client and us, for exp, nbf and iat. */
export const CLIENT_ASSERTION_CLOCK_TOLERANCE = 30;

/**
 * private_key_jwt (RFC 7523 §2.2 and §3, OpenID Connect Core §9): the client proves itself with
 * a JWT it signed, `iss` and `sub` its client_id, `aud` naming us, short-lived and used once.
 * The jti is spent only after the signature verified, so nobody can burn another client's jti.
 * Every defect is invalid_client (401), described in our own words: the assertion is never echoed.
 */
export async function authenticateWithAssertion(ctx: ServerContext, store: ClientLookup, params: Params): Promise<ClientRecord> {
  const type = params.get('client_assertion_type');
  const assertion = params.get('client_assertion');
  if (type === undefined || assertion === undefined) {
    throw new OAuthError('invalid_request', 'client_assertion and client_assertion_type are sent together');
  }
  if (type !== CLIENT_ASSERTION_TYPE) throw new OAuthError('invalid_client', `client_assertion_type must be ${CLIENT_ASSERTION_TYPE}`, 401);
  let clientId: string | undefined;
  try {
    const jwt = readAssertion(assertion, NAME);
    const { iss, sub } = jwt.claims;
    if (typeof sub !== 'string' || sub === '' || !isStorableText(sub)) throw new AssertionDefect(`the ${NAME} has no sub naming the client`);
    if (iss !== sub) throw new AssertionDefect(`the ${NAME}'s iss and sub must both be the client_id`);
    clientId = sub;
    const formId = params.get('client_id');
    if (formId !== undefined && formId !== sub) throw new AssertionDefect(`client_id does not match the ${NAME}'s sub`);

    const client = await store.getClient(sub);
    if (!client) throw new AssertionDefect(`the ${NAME}'s sub is not a registered client`);
    if (client.tokenEndpointAuthMethod !== 'private_key_jwt') {
      throw new AssertionDefect(`this client is registered for ${client.tokenEndpointAuthMethod}, not private_key_jwt`);
    }
    const registeredAlg = client.metadata.token_endpoint_auth_signing_alg;
    if (registeredAlg !== undefined && jwt.header.alg !== registeredAlg) {
      throw new AssertionDefect(`this client registered token_endpoint_auth_signing_alg ${String(registeredAlg)}; the ${NAME} must be signed with it`);
    }
    const rules: AssertionRules = {
      name: NAME,
      ...audienceRules(ctx.config.issuer, ctx.config.clientAssertionAudience),
      maxLifetimeSeconds: CLIENT_ASSERTION_MAX_LIFETIME,
      clockToleranceSeconds: CLIENT_ASSERTION_CLOCK_TOLERANCE,
    };
    const now = ctx.now();
    const verified = await verifyAssertion(jwt, ctx.clientKeys.keysOf(client), rules, now);
    await spendAssertion(ctx.store, verified, NAME, now, CLIENT_ASSERTION_CLOCK_TOLERANCE);
    return client;
  } catch (error) {
    if (!(error instanceof AssertionDefect)) throw error;
    ctx.log({ event: 'client_assertion_refused', ...(clientId === undefined ? {} : { client_id: clientId }), reason: error.message });
    throw new OAuthError('invalid_client', error.message, 401);
  }
}

/** The same at every endpoint that authenticates clients: the issuer names us wherever the assertion is sent. */
function audienceRules(issuer: string, accepted: ClientAssertionAudience): Pick<AssertionRules, 'audiences' | 'audienceList' | 'expectedAudience'> {
  if (accepted === 'issuer') return { audiences: [issuer], audienceList: false, expectedAudience: `the issuer identifier ${issuer}, as a single string` };
  const tokenEndpoint = `${issuer}${ENDPOINT_PATHS.token}`;
  return { audiences: [issuer, tokenEndpoint], audienceList: true, expectedAudience: `the issuer identifier ${issuer} or the token endpoint URL ${tokenEndpoint}` };
}
