/**
 * The Identity Assertion JWT Authorization Grant profile (ID-JAG, draft-ietf-oauth-identity-assertion-authz-grant):
 * the names both ends use, here below both, so the server's grant, its metadata and the client
 * that asks an IdP for one share them.
 */

/** The JWT `typ` an ID-JAG carries. */
export const ID_JAG_TYP = 'oauth-id-jag+jwt';
/** The grant profile, advertised as `authorization_grant_profiles_supported`. */
export const ID_JAG_PROFILE = 'urn:ietf:params:oauth:grant-profile:id-jag';
/** RFC 8693 token type of an ID-JAG: what a client asks its IdP for by token exchange. */
export const ID_JAG_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id-jag';
/** RFC 8693 token type of an OpenID Connect ID token: what the client exchanges for an ID-JAG. */
export const ID_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id_token';
/** RFC 8693 §2.1: the grant type of a token exchange. */
export const TOKEN_EXCHANGE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:token-exchange';
