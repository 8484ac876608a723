import { OAuthError } from '../../core/errors.js';
import { fail, ok, unreachable, type Defect, type Result } from '../../core/result.js';
import { isStorableText } from '../../core/storable-text.js';
import type { ClientRecord } from '../../store/store.js';
import { readAssertion, spendAssertion, verifyAssertion, type AssertionDefect, type AssertionRules } from '../assertions/verify-assertion.js';
import type { ClientLookup } from '../clients.js';
import type { ResolvedConfig } from '../config.js';
import type { BaseServices } from '../services.js';
import type { ClientKeys } from '../assertions/client-keys.js';
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
 * What is wrong with a client assertion: a defect of the JWT, or of the `client` it names (iss and
 * sub not its client_id, not registered) or of that client's `registration` (another
 * authentication method, another signing algorithm).
 */
type ClientAssertionDefect = AssertionDefect | Defect<'client' | 'registration'>;

/**
 * private_key_jwt (RFC 7523 §2.2 and §3, OpenID Connect Core §9): the client proves itself with
 * a JWT it signed, `iss` and `sub` its client_id, `aud` naming us, short-lived and used once.
 * The jti is spent only after the signature verified, so nobody can burn another client's jti.
 * Every defect is invalid_client (401), described in our own words: the assertion is never echoed.
 */
export async function authenticateWithAssertion(ctx: BaseServices & { clientKeys: ClientKeys }, store: ClientLookup, params: Params): Promise<ClientRecord> {
  const type = params.get('client_assertion_type');
  const assertion = params.get('client_assertion');
  if (type === undefined || assertion === undefined) {
    throw new OAuthError('invalid_request', 'client_assertion and client_assertion_type are sent together');
  }
  if (type !== CLIENT_ASSERTION_TYPE) throw new OAuthError('invalid_client', `client_assertion_type must be ${CLIENT_ASSERTION_TYPE}`, 401);
  const checked = await checkClientAssertion(ctx, store, params, assertion);
  if (checked.ok) return checked.value;
  const { defect, clientId } = checked.defect;
  ctx.log({ event: 'client_assertion_refused', ...(clientId === undefined ? {} : { client_id: clientId }), reason: defect.description });
  throw clientAssertionError(defect);
}

/** The client the assertion proves, or its defect with the client id it claimed (for the log) once it named one. */
async function checkClientAssertion(
  ctx: BaseServices & { clientKeys: ClientKeys },
  store: ClientLookup,
  params: Params,
  assertion: string,
): Promise<Result<ClientRecord, { defect: ClientAssertionDefect; clientId?: string }>> {
  const read = readAssertion(assertion, NAME);
  if (!read.ok) return fail({ defect: read.defect });
  const jwt = read.value;
  const { iss, sub } = jwt.claims;
  if (typeof sub !== 'string' || sub === '' || !isStorableText(sub))
    return fail({ defect: { code: 'claims', description: `the ${NAME} has no sub naming the client` } });
  if (iss !== sub) return fail({ defect: { code: 'client', description: `the ${NAME}'s iss and sub must both be the client_id` } });
  const refuse = (code: 'client' | 'registration', description: string) => fail({ defect: { code, description }, clientId: sub });
  const formId = params.get('client_id');
  if (formId !== undefined && formId !== sub) return refuse('client', `client_id does not match the ${NAME}'s sub`);

  const client = await store.getClient(sub);
  if (!client) return refuse('client', `the ${NAME}'s sub is not a registered client`);
  if (client.tokenEndpointAuthMethod !== 'private_key_jwt') {
    return refuse('registration', `this client is registered for ${client.tokenEndpointAuthMethod}, not private_key_jwt`);
  }
  const registeredAlg = client.metadata.token_endpoint_auth_signing_alg;
  if (registeredAlg !== undefined && jwt.header.alg !== registeredAlg) {
    return refuse('registration', `this client registered token_endpoint_auth_signing_alg ${String(registeredAlg)}; the ${NAME} must be signed with it`);
  }
  const rules: AssertionRules = {
    name: NAME,
    ...audienceRules(ctx.config),
    maxLifetimeSeconds: CLIENT_ASSERTION_MAX_LIFETIME,
    clockToleranceSeconds: CLIENT_ASSERTION_CLOCK_TOLERANCE,
  };
  const now = ctx.now();
  const verified = await verifyAssertion(jwt, ctx.clientKeys.keysOf(client), rules, now);
  if (!verified.ok) return fail({ defect: verified.defect, clientId: sub });
  const spent = await spendAssertion(ctx.store, verified.value, NAME, now, CLIENT_ASSERTION_CLOCK_TOLERANCE);
  if (!spent.ok) return fail({ defect: spent.defect, clientId: sub });
  return ok(client);
}

/**
 * Every defect is the client failing to authenticate (RFC 6749 §5.2): keys that could not be
 * fetched from its jwks_uri included, since the client publishes them.
 */
function clientAssertionError(defect: ClientAssertionDefect): OAuthError {
  switch (defect.code) {
    case 'malformed':
    case 'algorithm':
    case 'header':
    case 'claims':
    case 'audience':
    case 'time':
    case 'key':
    case 'signature':
    case 'replayed':
    case 'keys_unavailable':
    case 'client':
    case 'registration':
      return new OAuthError('invalid_client', defect.description, 401);
    default:
      return unreachable(defect);
  }
}

/** The same at every endpoint that authenticates clients: the issuer names us wherever the assertion is sent. */
function audienceRules(
  config: Pick<ResolvedConfig, 'issuer' | 'endpoints' | 'clientAssertionAudience'>,
): Pick<AssertionRules, 'audiences' | 'audienceList' | 'expectedAudience'> {
  const { issuer } = config;
  if (config.clientAssertionAudience === 'issuer')
    return { audiences: [issuer], audienceList: false, expectedAudience: `the issuer identifier ${issuer}, as a single string` };
  const tokenEndpoint = config.endpoints.token;
  return {
    audiences: [issuer, tokenEndpoint],
    audienceList: true,
    expectedAudience: `the issuer identifier ${issuer} or the token endpoint URL ${tokenEndpoint}`,
  };
}
