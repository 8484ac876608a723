/**
 * The signing authorization server the conformance suite's resource-server scenarios stand up
 * for the server under test to trust: RFC 8414 metadata at
 * `/.well-known/oauth-authorization-server` and its public key at `jwks_uri`, on loopback. The
 * scenario mints the tokens with the private key itself.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK } from 'jose';

export interface SigningAuthorizationServer {
  issuer: string;
  alg: string;
  kid: string | undefined;
  privateKey: CryptoKey;
  close(): Promise<void>;
}

export async function startSigningAuthorizationServer(options: {
  alg: string;
  kid?: string;
  jwksPath: string;
  port?: number;
}): Promise<SigningAuthorizationServer> {
  const { privateKey, publicKey } = await generateKeyPair(options.alg, { extractable: true });
  const publicJwk: JWK = { ...(await exportJWK(publicKey)), alg: options.alg, use: 'sig', ...(options.kid ? { kid: options.kid } : {}) };
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const body =
      path === '/.well-known/oauth-authorization-server'
        ? {
            issuer,
            authorization_endpoint: `${issuer}/authorize`,
            token_endpoint: `${issuer}/token`,
            jwks_uri: `${issuer}${options.jwksPath}`,
            response_types_supported: ['code'],
            grant_types_supported: ['authorization_code', 'refresh_token'],
            code_challenge_methods_supported: ['S256'],
          }
        : path === options.jwksPath
          ? { keys: [publicJwk] }
          : undefined;
    res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body ?? { error: 'not_found' }));
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    alg: options.alg,
    kid: options.kid,
    privateKey,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
