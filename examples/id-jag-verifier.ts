/**
 * A third party's authorization server taking ID-JAGs from context-auth, its people's identity
 * provider (docs/enterprise.md, "A third party's authorization server"): the checks the ID-JAG
 * draft's processing rules ask of it, made with jose, knowing nothing of context-auth but its
 * issuer. test/e2e/id-jag-third-party.test.ts runs it against `serve --id-jag-config`.
 */
// #region verify
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';

/** What this authorization server is configured with. */
export interface IdJagTrust {
  /** context-auth's issuer, exactly as its ID-JAGs carry it in `iss`. */
  idpIssuer: string;
  /** This authorization server's own issuer: the audience context-auth issues ID-JAGs for. */
  ownIssuer: string;
}

const keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

/** The identity provider's keys: its discovery document's jwks_uri, read once (jose fetches the set again for a kid it does not know). */
async function keysOf(idpIssuer: string): Promise<ReturnType<typeof createRemoteJWKSet>> {
  const known = keySets.get(idpIssuer);
  if (known) return known;
  const response = await fetch(`${idpIssuer}/.well-known/openid-configuration`);
  if (!response.ok) throw new Error(`the identity provider's discovery document could not be read (${response.status})`);
  const metadata = (await response.json()) as { issuer?: unknown; jwks_uri?: unknown };
  // The document must be the issuer's own (OpenID Connect Discovery §4.3).
  if (metadata.issuer !== idpIssuer || typeof metadata.jwks_uri !== 'string') throw new Error("the discovery document is not the identity provider's");
  const keys = createRemoteJWKSet(new URL(metadata.jwks_uri));
  keySets.set(idpIssuer, keys);
  return keys;
}

/**
 * The claims of an ID-JAG the identity provider signed for this server and for `clientId`, the
 * client that authenticated with this request; throws otherwise. What is left to this server:
 * spend the `jti` once (for every replica, until `exp`), find the person by `iss` and `sub`, and
 * read `scope` (the identity provider's scope names) as this server's own.
 */
export async function verifyIdJag(assertion: string, clientId: string, trust: IdJagTrust): Promise<JWTPayload> {
  const { payload } = await jwtVerify(assertion, await keysOf(trust.idpIssuer), {
    typ: 'oauth-id-jag+jwt',
    issuer: trust.idpIssuer,
    audience: trust.ownIssuer,
    algorithms: ['ES256'],
    requiredClaims: ['sub', 'client_id', 'jti', 'iat', 'exp'],
  });
  if (payload.client_id !== clientId) throw new Error('the ID-JAG is for another client');
  return payload;
}
// #endregion verify
