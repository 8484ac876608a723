/**
 * The MCP conformance suite's enterprise-managed authorization scenarios for the resource
 * authorization server, not in a release yet: `ema/resource-authorization-server/*` of
 * https://github.com/modelcontextprotocol/conformance/pull/490 (the scenarios under
 * src/scenarios/ema/resource-authorization-server/ at commit
 * 1f87d8023c4c07fa54b25602557b1b862df0acf4, their discovery and IdP helpers at
 * fb75f4acc27e4a7d0a680dc811f9502e936f3b55). Each test is one scenario, named after it, and
 * asserts every check the scenario makes, against the built `context-auth serve --trusted-idp`:
 * the scenario discovers the token and introspection endpoints from our RFC 8414 metadata, has
 * its IdP (ES256, RFC 8414 metadata, `/jwks`) mint an ID-JAG, presents it with
 * client_secret_post, and introspects the token with the same client.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from '../serve-process.js';
import { startIdpAuthorizationServer, type IdJagInput, type IdpAuthorizationServer } from './idp-authorization-server.js';

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const ID_JAG_PROFILE = 'urn:ietf:params:oauth:grant-profile:id-jag';

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

describe('upcoming conformance: ema/resource-authorization-server/* against serve --trusted-idp', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  let idp: IdpAuthorizationServer;
  let untrustedIdp: IdpAuthorizationServer;
  let server: RunningServer;
  let client: { client_id: string; client_secret: string };
  let endpoints: { issuer: string; token_endpoint: string; introspection_endpoint: string };
  /** The MCP server our ID-JAGs name, the one `serve` issues tokens for; and a scope registered for it. */
  let trustedMcpServer: string;
  const scope = 'mcp:tools';

  before(async () => {
    idp = await startIdpAuthorizationServer();
    untrustedIdp = await startIdpAuthorizationServer();
    server = await startServe(['--port', String(await freePort()), '--data', data, '--quiet', '--trusted-idp', idp.issuer, '--allow-insecure-idp']);
    // The scenarios authenticate with client_secret_post, so the client is registered for it.
    const registered = await fetch(`${server.issuer}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Conformance client', grant_types: [JWT_BEARER], token_endpoint_auth_method: 'client_secret_post' }),
    });
    assert.equal(registered.status, 201, await registered.clone().text());
    client = (await registered.json()) as typeof client;
    trustedMcpServer = `${server.issuer}/mcp`;
    // The scenarios' discovery: the well-known URI under the issuer.
    const metadata = await fetch(`${server.issuer}/.well-known/oauth-authorization-server`);
    assert.equal(metadata.status, 200);
    endpoints = (await metadata.json()) as typeof endpoints;
    assert.equal(typeof endpoints.token_endpoint, 'string');
    assert.equal(typeof endpoints.introspection_endpoint, 'string');
  });

  after(async () => {
    await server?.stop();
    await idp?.close();
    await untrustedIdp?.close();
  });

  async function post(url: string, form: Record<string, string>): Promise<Answer> {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...form, client_id: client.client_id, client_secret: client.client_secret }),
    });
    return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
  }

  const present = (assertion: string) => post(endpoints.token_endpoint, { grant_type: JWT_BEARER, assertion });
  const idJag = (issuer: IdpAuthorizationServer, input: Omit<IdJagInput, 'audience' | 'clientId'>) =>
    issuer.issueIdJag({ audience: endpoints.issuer, clientId: client.client_id, ...input });

  /** The id `serve` keeps the IdP's person under: what introspection must say is the token's `sub`. */
  async function localUserId(idpSubject: string): Promise<string> {
    const listed = await cli(['users', 'list', '--data', data, '--json']);
    assert.equal(listed.code, 0, listed.stderr);
    const users = JSON.parse(listed.stdout) as { id: string; username: string }[];
    const user = users.find((candidate) => candidate.username.includes(idpSubject));
    assert.ok(user, `a user for ${idpSubject} among ${listed.stdout}`);
    return user.id;
  }

  /** The checks every happy path makes of the token response, then of the introspection response. */
  async function happyPath(idpSubject: string, claims: { resource?: string; scope?: string }): Promise<Record<string, unknown>> {
    const token = await present(await idJag(idp, { subject: idpSubject, ...claims }));
    // *-token-response: 200, JSON, an access_token and a token_type.
    assert.equal(token.status, 200, JSON.stringify(token.body));
    assert.match(token.headers.get('content-type') ?? '', /application\/json/i);
    assert.equal(typeof token.body.access_token, 'string');
    assert.ok(typeof token.body.token_type === 'string' && token.body.token_type.length > 0);
    // *-token-cache-control and *-no-refresh-token.
    assert.match(token.headers.get('cache-control') ?? '', /no-store/i);
    assert.equal(token.body.refresh_token, undefined);
    const introspection = await post(endpoints.introspection_endpoint, { token: token.body.access_token as string });
    // *-introspection-active, -client-id, -sub.
    assert.equal(introspection.status, 200, JSON.stringify(introspection.body));
    assert.equal(introspection.body.active, true, JSON.stringify(introspection.body));
    assert.equal(introspection.body.client_id, client.client_id);
    assert.equal(introspection.body.sub, await localUserId(idpSubject));
    return introspection.body;
  }

  /** *-aud-format and *-aud-value: one audience, the MCP server the ID-JAG named. */
  function assertAudience(introspection: Record<string, unknown>): void {
    const aud = introspection.aud;
    const values = typeof aud === 'string' ? [aud] : Array.isArray(aud) && aud.length === 1 && typeof aud[0] === 'string' ? aud : undefined;
    assert.ok(values, `aud is a string or a one-element array: ${JSON.stringify(aud)}`);
    assert.equal(values[0], trustedMcpServer);
  }

  it('ema/resource-authorization-server/metadata', async () => {
    const metadata = (await (await fetch(`${server.issuer}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    const profiles =
      typeof metadata.authorization_grant_profiles_supported === 'string'
        ? [metadata.authorization_grant_profiles_supported]
        : metadata.authorization_grant_profiles_supported;
    // resource-as-metadata-grant-profiles-supported, -id-jag-grant-profile
    assert.ok(Array.isArray(profiles) && profiles.every((value) => typeof value === 'string'), JSON.stringify(profiles));
    assert.ok(profiles.includes(ID_JAG_PROFILE));
    // resource-as-metadata-grant-types-supported, -jwt-bearer-grant-type
    const grantTypes = metadata.grant_types_supported;
    assert.ok(Array.isArray(grantTypes) && grantTypes.every((value) => typeof value === 'string'), JSON.stringify(grantTypes));
    assert.ok(grantTypes.includes(JWT_BEARER));
  });

  it('ema/resource-authorization-server/happy-path (an ID-JAG without resource)', async () => {
    await happyPath('user-happy-path', {});
  });

  it('ema/resource-authorization-server/happy-path-with-resource', async () => {
    assertAudience(await happyPath('user-with-resource', { resource: trustedMcpServer }));
  });

  it('ema/resource-authorization-server/happy-path-with-scope', async () => {
    const introspection = await happyPath('user-with-scope', { resource: trustedMcpServer, scope });
    assertAudience(introspection);
    // resource-as-happy-with-scope-introspection-scope
    assert.ok(typeof introspection.scope === 'string' && introspection.scope.split(' ').includes(scope), JSON.stringify(introspection.scope));
  });

  /** The error paths' two checks: HTTP 400 and the error code. */
  function assertRefused(answer: Answer, error: string): void {
    assert.equal(answer.status, 400, JSON.stringify(answer.body));
    assert.equal(answer.body.error, error, JSON.stringify(answer.body));
  }

  it('ema/resource-authorization-server/error-path (resource names an untrusted MCP server)', async () => {
    assertRefused(await present(await idJag(idp, { subject: 'user-error-path', resource: 'https://attacker.mcp.example/' })), 'invalid_target');
  });

  it('ema/resource-authorization-server/error-path-invalid-scope', async () => {
    const unregistered = `urn:mcp-conformance:unregistered-scope:${randomUUID()}`;
    assertRefused(await present(await idJag(idp, { subject: 'user-invalid-scope', resource: trustedMcpServer, scope: unregistered })), 'invalid_scope');
  });

  it('ema/resource-authorization-server/error-path-invalid-signature', async () => {
    const forged = await idp.issueIdJagWithUnpublishedKey({
      subject: 'ema-invalid-signature-test-subject',
      audience: endpoints.issuer,
      clientId: client.client_id,
      resource: trustedMcpServer,
    });
    assertRefused(await present(forged), 'invalid_grant');
  });

  it('ema/resource-authorization-server/error-path-untrusted-idp', async () => {
    assertRefused(await present(await idJag(untrustedIdp, { subject: 'user-untrusted-idp', resource: trustedMcpServer })), 'invalid_grant');
  });
});
