/**
 * OAuth 2.0 Token Exchange (RFC 8693): the token type identifiers (§3) of the tokens a delegation
 * and an ID-JAG are asked for with, and the actor claim (§4.1) that a delegated token carries. The
 * grant type and the ID-JAG's and ID token's type identifiers are the ID-JAG profile's
 * (core/id-jag.ts), which the client shares.
 */

/** RFC 8693 §3: an access token, the subject token of a delegation and the token it issues. */
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
/** RFC 8693 §3: a refresh token, the subject token an ID-JAG is issued for. */
export const REFRESH_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:refresh_token';

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
