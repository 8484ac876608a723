/**
 * The MCP conformance suite's DPoP scenario for the authorization server (SEP-1932), not in a
 * release yet: `dpop` of https://github.com/modelcontextprotocol/conformance/pull/396
 * (src/scenarios/authorization-server/dpop.ts at commit
 * 464e8778604d696daaff134ef62798bb1ac974a7), against the built `context-auth serve`. Its three
 * checks: the metadata advertises `dpop_signing_alg_values_supported`, lists in it only asymmetric
 * algorithms, and a code exchanged with a proof (authorization_code + PKCE, a public client, the
 * nonce handshake answered once) gives a token bound to the proof key. The scenario waits for a
 * person to sign in where the authorization server asks for it; here the test signs in as one.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { Browser, signInAndConsent } from '../../helpers/harness.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from '../serve-process.js';

const USER = { username: 'dana', password: 'a long enough password' };

describe('upcoming conformance: the authorization-server dpop scenario against serve', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  let server: RunningServer;
  let metadata: Record<string, unknown>;

  before(async () => {
    server = await startServe(['--port', String(await freePort()), '--data', data, '--quiet', '--dpop-nonce']);
    const added = await cli(['users', 'add', USER.username, '--data', data], `${USER.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    const response = await fetch(`${server.issuer}/.well-known/oauth-authorization-server`);
    assert.equal(response.status, 200);
    metadata = (await response.json()) as Record<string, unknown>;
  });

  after(async () => {
    await server?.stop();
  });

  it('sep-1932-as-metadata-alg-values: dpop_signing_alg_values_supported is a non-empty array', () => {
    const algorithms = metadata.dpop_signing_alg_values_supported;
    assert.ok(Array.isArray(algorithms) && algorithms.length > 0, JSON.stringify(algorithms));
  });

  it('sep-1932-as-no-none-alg: no none and no symmetric (HS*) algorithm among them', () => {
    const algorithms = metadata.dpop_signing_alg_values_supported as unknown[];
    const forbidden = algorithms.filter((alg) => typeof alg === 'string' && (alg.toLowerCase() === 'none' || alg.toUpperCase().startsWith('HS')));
    assert.deepEqual(forbidden, []);
  });

  it('sep-1932-as-token-binding: a code exchanged with a proof gives token_type DPoP and cnf.jkt of the proof key', async () => {
    const algorithms = metadata.dpop_signing_alg_values_supported as string[];
    // The scenario's negotiation: the first advertised algorithm it can make a key for.
    const alg = algorithms.find((value) => ['ES256', 'ES384', 'ES512', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'EdDSA'].includes(value));
    assert.ok(alg, `an algorithm the scenario can produce among ${algorithms.join(' ')}`);
    const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
    const jwk: JWK = await exportJWK(publicKey);
    const thumbprint = await calculateJwkThumbprint(jwk);

    // The scenario's redirect URI: http://127.0.0.1:{port}/callback, registered for the client.
    const redirectUri = `http://127.0.0.1:${await freePort()}/callback`;
    const registered = await fetch(`${server.issuer}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Conformance DPoP client', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' }),
    });
    assert.equal(registered.status, 201, await registered.clone().text());
    const { client_id: clientId } = (await registered.json()) as { client_id: string };

    const state = randomBytes(32).toString('base64url');
    const verifier = randomBytes(32).toString('base64url');
    const authorize = new URL(metadata.authorization_endpoint as string);
    authorize.search = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      state,
      redirect_uri: redirectUri,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    }).toString();
    const browser = new Browser((path, init) => fetch(new URL(path, server.issuer), init));
    const callback = await signInAndConsent(browser, await browser.fetch(authorize.pathname + authorize.search), USER, 'approve', server.issuer);
    // The scenario's checks of the authorization response.
    assert.equal(`${callback.origin}${callback.pathname}`, redirectUri);
    assert.deepEqual(callback.searchParams.getAll('state'), [state]);
    const codes = callback.searchParams.getAll('code');
    assert.equal(codes.length, 1);
    const issuers = callback.searchParams.getAll('iss');
    assert.ok(issuers.length === 0 || (issuers.length === 1 && issuers[0] === metadata.issuer), issuers.join(','));

    const tokenEndpoint = metadata.token_endpoint as string;
    const htu = `${new URL(tokenEndpoint).origin}${new URL(tokenEndpoint).pathname}`;
    const proof = (nonce?: string) =>
      new SignJWT({ jti: randomUUID(), htm: 'POST', htu, iat: Math.floor(Date.now() / 1000), ...(nonce ? { nonce } : {}) })
        .setProtectedHeader({ typ: 'dpop+jwt', alg, jwk })
        .sign(privateKey);
    const exchange = async (dpop: string) => {
      const response = await fetch(tokenEndpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', dpop },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: codes[0]!,
          redirect_uri: redirectUri,
          code_verifier: verifier,
          client_id: clientId,
        }),
      });
      return { status: response.status, nonce: response.headers.get('dpop-nonce'), body: (await response.json()) as Record<string, unknown> };
    };
    let answer = await exchange(await proof());
    // RFC 9449 §8: a use_dpop_nonce answer is retried once with the nonce it gives.
    if (answer.status === 400 && answer.body.error === 'use_dpop_nonce' && answer.nonce) answer = await exchange(await proof(answer.nonce));
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.ok(typeof answer.body.access_token === 'string' && answer.body.access_token.length > 0);
    assert.equal(answer.body.token_type, 'DPoP');
    const claims = decodeJwt(answer.body.access_token);
    assert.deepEqual((claims.cnf as { jkt?: string } | undefined)?.jkt, thumbprint);
  });
});
