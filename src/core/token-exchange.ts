/**
 * OAuth 2.0 Token Exchange (RFC 8693): the grant type and the token type identifiers (§3), and
 * the actor claim (§4.1) that a delegated token carries.
 */

export const TOKEN_EXCHANGE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
export const REFRESH_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:refresh_token';
export const ID_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id_token';
/** The Identity Assertion JWT Authorization Grant's token type (draft-ietf-oauth-identity-assertion-authz-grant). */
export const ID_JAG_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id-jag';

/** `act` (RFC 8693 §4.1): who acts for the token's subject; a nested `act` is who acted before it. */
export interface ActorClaim {
  sub: string;
  act?: ActorClaim;
}

/**
 * The actor chain of a token's `act` claim, the current actor first; undefined when the claim is
 * malformed (a chain we did not write). An absent claim is the empty chain.
 */
export function actorChain(claim: unknown): string[] | undefined {
  const chain: string[] = [];
  let current = claim;
  while (current !== undefined) {
    if (typeof current !== 'object' || current === null || Array.isArray(current)) return undefined;
    const { sub, act } = current as Record<string, unknown>;
    if (typeof sub !== 'string' || sub === '') return undefined;
    chain.push(sub);
    current = act;
  }
  return chain;
}
