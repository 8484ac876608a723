/**
 * The IdP authorization server the conformance suite's resource-AS scenarios run beside the
 * server under test: RFC 8414 metadata at `/.well-known/oauth-authorization-server` and its key
 * set at `/jwks` on a loopback port, an ES256 key, and ID-JAGs (`typ: oauth-id-jag+jwt`) signed
 * with it, or with a key it never publishes.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';

export interface IdJagInput {
  subject: string;
  /** The resource authorization server's issuer identifier. */
  audience: string;
  clientId: string;
  resource?: string;
  scope?: string;
}

export interface IdpAuthorizationServer {
  issuer: string;
  issueIdJag(input: IdJagInput): Promise<string>;
  /** The same ID-JAG signed with a fresh key that is not in this IdP's key set. */
  issueIdJagWithUnpublishedKey(input: IdJagInput): Promise<string>;
  close(): Promise<void>;
}

async function es256Key(kid: string): Promise<{ privateKey: CryptoKey; publicJwk: JWK; kid: string }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  return { privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' }, kid };
}

export async function startIdpAuthorizationServer(): Promise<IdpAuthorizationServer> {
  const key = await es256Key('idp-es256-1');
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    const body =
      path === '/.well-known/oauth-authorization-server'
        ? {
            issuer,
            token_endpoint: `${issuer}/token`,
            jwks_uri: `${issuer}/jwks`,
            grant_types_supported: ['urn:ietf:params:oauth:grant-type:token-exchange'],
            token_endpoint_auth_methods_supported: ['client_secret_basic'],
            response_types_supported: ['code'],
            id_token_signing_alg_values_supported: ['ES256'],
          }
        : path === '/jwks'
          ? { keys: [key.publicJwk] }
          : undefined;
    res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body ?? { error: 'not_found' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // The runner's own default is http://localhost:PORT; it takes an issuer override, and `serve
  // --allow-insecure-idp` trusts plain http on 127.0.0.1 only.
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const sign = (signer: { privateKey: CryptoKey; kid: string }, input: IdJagInput) =>
    new SignJWT({
      ...(input.resource !== undefined ? { resource: input.resource } : {}),
      client_id: input.clientId,
      ...(input.scope !== undefined ? { scope: input.scope } : {}),
    })
      .setProtectedHeader({ alg: 'ES256', typ: 'oauth-id-jag+jwt', kid: signer.kid })
      .setIssuer(issuer)
      .setSubject(input.subject)
      .setAudience(input.audience)
      .setExpirationTime('5m')
      .setJti(randomUUID())
      .setIssuedAt()
      .sign(signer.privateKey);
  return {
    issuer,
    issueIdJag: (input) => sign(key, input),
    issueIdJagWithUnpublishedKey: async (input) => sign(await es256Key('idp-unpublished-es256'), input),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
