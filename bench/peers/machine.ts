/**
 * The load generator's side of the machine-grants bench: its ES256 key pair (the public half is
 * handed to every server, which registers it for its private_key_jwt client), and one request
 * builder per way a machine authenticates. A builder makes the form and headers of one token
 * request from what the server announced (child.ts MachineSetup). Shared by
 * bench/machine-grants.ts and the test that checks each peer is set up as the README says.
 */
import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { JWT_BEARER_GRANT_TYPE } from '../../src/core/protocol.js';
import { jwtSigner } from '../../src/core/jwt.js';
import type { MachineSetup } from './child.js';
import { tokenGrant, type Running } from './process.js';

export const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** How long a signed assertion lives: well inside every server's limit. */
const ASSERTION_SECONDS = 60;

export interface MachineKey {
  privateKey: KeyObject;
  publicJwk: Record<string, unknown>;
  /** What a server under test is started with (BENCH_MACHINE_JWK: the public JWK). */
  env: Record<string, string>;
}

export function machineKey(): MachineKey {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'bench-machine', use: 'sig', alg: 'ES256' };
  return { privateKey, publicJwk: jwk, env: { BENCH_MACHINE_JWK: JSON.stringify(jwk) } };
}

export interface MachineRequest {
  form: Record<string, string>;
  headers: Record<string, string>;
}

/** Builds one token request for a server; called once per request, inside the measured window. */
export type RequestBuilder = (server: Running) => MachineRequest;

function setupOf(server: Running): MachineSetup {
  if (!server.machine) throw new Error(`${server.name}: started without BENCH_MACHINE_JWK`);
  return server.machine;
}

/** RFC 6749 §2.3.1: both parts form-urlencoded, then base64. */
const basic = (id: string, secret: string): string => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

/** client_credentials with a client secret in the Authorization header (client_secret_basic). */
export const clientCredentialsWithSecret: RequestBuilder = (server) => {
  const { resource, scope, secretClient } = setupOf(server);
  return { form: { grant_type: 'client_credentials', scope, resource }, headers: { authorization: basic(secretClient.clientId, secretClient.secret) } };
};

/**
 * client_credentials with private_key_jwt: an ES256 assertion signed here for every request, with
 * a fresh jti (the servers accept each jti once). `jti` overrides that, for the test of replays.
 */
export function clientCredentialsWithAssertion(key: MachineKey, jti?: () => string): RequestBuilder {
  const sign = jwtSigner({ alg: 'ES256', kid: 'bench-machine', typ: 'JWT' }, key.privateKey);
  return (server) => {
    const { audience, resource, scope, keyClientId } = setupOf(server);
    const now = Math.floor(Date.now() / 1000);
    const assertion = sign({ iss: keyClientId, sub: keyClientId, aud: audience, jti: jti?.() ?? randomUUID(), iat: now, exp: now + ASSERTION_SECONDS });
    return {
      form: { grant_type: 'client_credentials', scope, resource, client_assertion_type: CLIENT_ASSERTION_TYPE, client_assertion: assertion },
      headers: {},
    };
  };
}

/**
 * The load generator as an issuer of assertions for the jwt-bearer rows: OpenID discovery and its
 * key set on 127.0.0.1, which a server started with BENCH_ASSERTION_ISSUER trusts (as an
 * enterprise IdP and as a workload issuer). Fetched once by each server, before the measurement.
 */
export async function startAssertionIssuer(key: MachineKey): Promise<{ issuer: string; close(): Promise<void> }> {
  const server = http.createServer((request, response) => {
    const body =
      request.url === '/.well-known/openid-configuration'
        ? { issuer, jwks_uri: `${issuer}/jwks` }
        : request.url === '/jwks'
          ? { keys: [key.publicJwk] }
          : undefined;
    response.writeHead(body ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(body ?? {}));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { issuer, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/**
 * The jwt-bearer grant with a workload token (SEP-1933): signed here per request with a fresh
 * jti, as the platform would issue it; no client authentication (the token is the workload's).
 */
export function jwtBearerWithWorkloadToken(key: MachineKey, issuer: string): RequestBuilder {
  const sign = jwtSigner({ alg: 'ES256', kid: 'bench-machine', typ: 'JWT' }, key.privateKey);
  return (server) => {
    const { audience, resource, scope } = setupOf(server);
    const now = Math.floor(Date.now() / 1000);
    const assertion = sign({ iss: issuer, sub: 'bench-workload', aud: audience, jti: randomUUID(), iat: now, exp: now + ASSERTION_SECONDS });
    return { form: { grant_type: JWT_BEARER_GRANT_TYPE, assertion, scope, resource }, headers: {} };
  };
}

/**
 * The jwt-bearer grant with an ID-JAG (SEP-990) for one person, signed here per request as the
 * enterprise IdP would issue it, presented by the secret client (client_secret_basic).
 */
export function jwtBearerWithIdJag(key: MachineKey, issuer: string): RequestBuilder {
  const sign = jwtSigner({ alg: 'ES256', kid: 'bench-machine', typ: 'oauth-id-jag+jwt' }, key.privateKey);
  return (server) => {
    const { audience, resource, scope, secretClient } = setupOf(server);
    const now = Math.floor(Date.now() / 1000);
    const assertion = sign({
      iss: issuer,
      sub: 'bench-person',
      aud: audience,
      resource,
      client_id: secretClient.clientId,
      scope,
      jti: randomUUID(),
      iat: now,
      exp: now + ASSERTION_SECONDS,
    });
    return { form: { grant_type: JWT_BEARER_GRANT_TYPE, assertion, scope }, headers: { authorization: basic(secretClient.clientId, secretClient.secret) } };
  };
}

/** One token request built by `build`; resolves with the answer, rejects on any but 200 with an access token. */
export function machineGrant(server: Running, build: RequestBuilder): Promise<Record<string, unknown>> {
  const { form, headers } = build(server);
  return tokenGrant(server, form, headers);
}
