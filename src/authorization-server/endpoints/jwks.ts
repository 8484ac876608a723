import { respond, type Answer } from '../http/responses.js';
import type { SigningKeys } from '../keys.js';

/** GET /jwks: the current and previous public signing keys (RFC 7517). */
export async function jwksEndpoint(ctx: { keys: SigningKeys }): Promise<Answer> {
  // Short, so resource servers see a rotation soon; they also refetch on an unknown kid.
  return respond(JSON.stringify(await ctx.keys.publicJwks()), 200, { 'Content-Type': 'application/jwk-set+json', 'Cache-Control': 'public, max-age=60' });
}
