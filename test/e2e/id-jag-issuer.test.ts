/**
 * context-auth as the people's identity provider for another context-auth: two `serve` processes,
 * the IdP (`--id-jag-config`, naming the second as an audience and mapping its client) and the
 * resource authorization server (`--trusted-idp` naming the first). A person signs in at the IdP
 * through a confidential client, which exchanges its refresh token there for an ID-JAG and presents
 * it at the second, with the jwt-bearer grant, for a token to the second's /mcp. Then the official
 * SDK v2 client's CrossAppAccessProvider does the same, its assertion callback asking the IdP; and
 * the SDK's discoverAndRequestJwtAuthGrant exchanges the person's ID token of ours for one.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client, CrossAppAccessProvider, discoverAndRequestJwtAuthGrant, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { authorizeUrl, basic, Browser, jwtClaims, pkcePair, signInAndConsent } from '../helpers/harness.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ID_JAG = 'urn:ietf:params:oauth:token-type:id-jag';
const REFRESH_TOKEN = 'urn:ietf:params:oauth:token-type:refresh_token';
const REDIRECT_URI = 'http://127.0.0.1:9/cb';
const ALICE = { username: 'alice', password: 'correct horse battery' };

interface Credentials {
  client_id: string;
  client_secret: string;
}

describe('context-auth issuing ID-JAGs, redeemed by a second serve --trusted-idp', { timeout: 300_000 }, () => {
  const idpData = tempDataFolder();
  const rasData = tempDataFolder();
  let idp: RunningServer;
  let ras: RunningServer;
  /** The person's client at the IdP, and the same application's client at the resource AS. */
  let atIdp: Credentials;
  let atRas: Credentials;
  let refreshToken: string;

  before(async () => {
    const idpIssuer = `http://127.0.0.1:${await freePort()}`;
    ras = await startServe(['--port', String(await freePort()), '--data', rasData, '--quiet', '--trusted-idp', idpIssuer, '--allow-insecure-idp']);
    atRas = await addClient(['--name', 'Corp assistant', '--grant-type', 'jwt-bearer', '--data', rasData]);
    const added = await cli(['users', 'add', ALICE.username, '--data', idpData], `${ALICE.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    atIdp = await addClient(['--name', 'Corp assistant', '--redirect-uri', REDIRECT_URI, '--secret', '--data', idpData]);
    const audiences = join(idpData, 'id-jag.json');
    writeFileSync(audiences, JSON.stringify([{ issuer: ras.issuer, clients: { [atIdp.client_id]: atRas.client_id } }]));
    idp = await startServe(['--port', new URL(idpIssuer).port, '--data', idpData, '--quiet', '--id-jag-config', audiences]);
    assert.equal(idp.issuer, idpIssuer);
    refreshToken = (await signIn(idp, atIdp)).refresh_token!;
  });

  after(async () => {
    await idp?.stop();
    await ras?.stop();
  });

  it('names in its banner the authorization server it issues ID-JAGs for', () => {
    assert.ok(idp.output().includes(`id-jag for    ${ras.issuer}   (ID-JAGs issued, as the identity provider)`), idp.output());
  });

  it('advertises token exchange at the IdP', async () => {
    const metadata = (await (await fetch(`${idp.issuer}/.well-known/oauth-authorization-server`)).json()) as { grant_types_supported: string[] };
    assert.ok(metadata.grant_types_supported.includes(TOKEN_EXCHANGE));
  });

  it('issues an ID-JAG for the resource AS, which redeems it for a token to its /mcp, for the person', async () => {
    const grant = await askIdJag(ras.issuer, `${ras.issuer}/mcp`, 'mcp:tools');
    const claims = jwtClaims(grant);
    assert.equal(claims.iss, idp.issuer);
    assert.equal(claims.aud, ras.issuer);
    assert.equal(claims.client_id, atRas.client_id);
    const response = await fetch(`${ras.issuer}/token`, {
      method: 'POST',
      headers: { authorization: basic(atRas.client_id, atRas.client_secret) },
      body: new URLSearchParams({ grant_type: JWT_BEARER, assertion: grant }),
    });
    assert.equal(response.status, 200, await response.clone().text());
    const { access_token: accessToken } = (await response.json()) as { access_token: string };
    const who = await whoami({ requestInit: { headers: { authorization: `Bearer ${accessToken}` } } });
    assert.equal(who.client_id, atRas.client_id);
    assert.equal(who.username, `trusted-idp:${String(claims.sub)}`);
    // Single use at the resource AS: the same ID-JAG again is refused.
    const again = await fetch(`${ras.issuer}/token`, {
      method: 'POST',
      headers: { authorization: basic(atRas.client_id, atRas.client_secret) },
      body: new URLSearchParams({ grant_type: JWT_BEARER, assertion: grant }),
    });
    assert.equal(again.status, 400);
  });

  it('refuses an audience the IdP was not told of', async () => {
    const response = await exchange({ audience: 'https://elsewhere.example' });
    assert.equal(response.status, 400);
    assert.equal(((await response.json()) as { error: string }).error, 'invalid_target');
  });

  it('the SDK v2 CrossAppAccessProvider connects with an ID-JAG its assertion callback gets from the IdP', async () => {
    const audiences: string[] = [];
    const provider = new CrossAppAccessProvider({
      assertion: async (context) => {
        audiences.push(context.authorizationServerUrl);
        return askIdJag(context.authorizationServerUrl, context.resourceUrl, context.scope);
      },
      clientId: atRas.client_id,
      clientSecret: atRas.client_secret,
      expectedIssuer: ras.issuer,
    });
    const who = await whoami({ authProvider: provider });
    assert.equal(who.client_id, atRas.client_id);
    assert.match(String(who.username), /^trusted-idp:/);
    assert.deepEqual(audiences, [ras.issuer]);
  });

  it('gives an ID token with openid, which a relying party verifies by discovery and the SDK v2 exchanges for an ID-JAG', async () => {
    const tokens = await signIn(idp, atIdp, 'openid profile mcp:tools');
    const discovery = (await (await fetch(`${idp.issuer}/.well-known/openid-configuration`)).json()) as {
      issuer: string;
      jwks_uri: string;
      userinfo_endpoint: string;
    };
    const { payload } = await jwtVerify(tokens.id_token!, createRemoteJWKSet(new URL(discovery.jwks_uri)), {
      issuer: discovery.issuer,
      audience: atIdp.client_id,
    });
    const userinfo = await fetch(discovery.userinfo_endpoint, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    assert.deepEqual(await userinfo.json(), { sub: payload.sub, preferred_username: ALICE.username });

    const { jwtAuthGrant } = await discoverAndRequestJwtAuthGrant({
      idpUrl: idp.issuer,
      audience: ras.issuer,
      resource: `${ras.issuer}/mcp`,
      idToken: tokens.id_token!,
      clientId: atIdp.client_id,
      clientSecret: atIdp.client_secret,
      scope: 'mcp:tools',
      // The SDK posts the secret in the body; the client is registered for client_secret_basic.
      fetchFn: asBasicAuthentication,
    });
    const claims = jwtClaims(jwtAuthGrant);
    assert.equal(claims.sub, payload.sub);
    assert.equal(claims.scope, 'mcp:tools');
    const response = await fetch(`${ras.issuer}/token`, {
      method: 'POST',
      headers: { authorization: basic(atRas.client_id, atRas.client_secret) },
      body: new URLSearchParams({ grant_type: JWT_BEARER, assertion: jwtAuthGrant }),
    });
    assert.equal(response.status, 200, await response.clone().text());
    const { access_token: accessToken } = (await response.json()) as { access_token: string };
    const who = await whoami({ requestInit: { headers: { authorization: `Bearer ${accessToken}` } } });
    assert.equal(who.username, `trusted-idp:${String(payload.sub)}`);
  });

  async function addClient(args: string[]): Promise<Credentials> {
    const added = await cli(['clients', 'add', ...args, '--json']);
    assert.equal(added.code, 0, added.stderr);
    return JSON.parse(added.stdout) as Credentials;
  }

  function exchange(extra: Record<string, string | undefined>): Promise<Response> {
    const body = new URLSearchParams({
      grant_type: TOKEN_EXCHANGE,
      requested_token_type: ID_JAG,
      subject_token: refreshToken,
      subject_token_type: REFRESH_TOKEN,
      audience: ras.issuer,
    });
    for (const [name, value] of Object.entries(extra))
      if (value === undefined) body.delete(name);
      else body.set(name, value);
    return fetch(`${idp.issuer}/token`, { method: 'POST', headers: { authorization: basic(atIdp.client_id, atIdp.client_secret) }, body });
  }

  async function askIdJag(audience: string, resource: string, scope: string | undefined): Promise<string> {
    const response = await exchange({ audience, resource, scope });
    assert.equal(response.status, 200, await response.clone().text());
    const body = (await response.json()) as { access_token: string; issued_token_type: string };
    assert.equal(body.issued_token_type, ID_JAG);
    return body.access_token;
  }

  async function whoami(options: ConstructorParameters<typeof StreamableHTTPClientTransport>[1]): Promise<Record<string, unknown>> {
    const client = new Client({ name: 'id-jag e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${ras.issuer}/mcp`), options));
    try {
      const result = await client.callTool({ name: 'whoami' });
      assert.notEqual(result.isError, true, JSON.stringify(result));
      return result.structuredContent as Record<string, unknown>;
    } finally {
      await client.close();
    }
  }
});

/** A fetch that moves a form's client_id and client_secret into a Basic Authorization header. */
async function asBasicAuthentication(url: string | URL, init?: RequestInit): Promise<Response> {
  const form = new URLSearchParams(String(init?.body ?? ''));
  const clientId = form.get('client_id');
  const secret = form.get('client_secret');
  if (clientId === null || secret === null) return fetch(url, init);
  form.delete('client_id');
  form.delete('client_secret');
  const headers = new Headers(init?.headers);
  headers.set('authorization', basic(clientId, secret));
  return fetch(url, { ...init, headers, body: form });
}

/** Alice signs in at `server` through `client` (a confidential browser client) and consents to `scope`; the token response. */
async function signIn(server: RunningServer, client: Credentials, scope = 'mcp:tools'): Promise<Record<string, string>> {
  const browser = new Browser((path, init) => fetch(new URL(path, server.issuer), init));
  const { verifier, challenge } = pkcePair();
  const start = await browser.fetch(
    authorizeUrl({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      scope,
    }),
  );
  const location = await signInAndConsent(browser, start, ALICE, 'approve', server.issuer);
  const code = location.searchParams.get('code');
  assert.ok(code, `no code: ${location}`);
  const response = await fetch(`${server.issuer}/token`, {
    method: 'POST',
    headers: { authorization: basic(client.client_id, client.client_secret) },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: REDIRECT_URI }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()) as Record<string, string>;
}
