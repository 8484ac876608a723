/**
 * Enterprise-managed authorization end to end: the official SDK v2 client's
 * CrossAppAccessProvider gets an ID-JAG from an enterprise IdP (a real one on loopback, doing
 * RFC 8693 token exchange of the person's ID token, through the SDK's requestJwtAuthorizationGrant)
 * and presents it to the built `context-auth serve --trusted-idp`, authenticating as a
 * confidential client an operator added with `clients add --grant-type jwt-bearer`. `whoami`
 * then shows the local user made from the IdP's identity.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client, CrossAppAccessProvider, requestJwtAuthorizationGrant, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startEnterpriseIdp, startTestIssuer, type EnterpriseIdp, type TestIssuer } from '../helpers/enterprise-idp.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

describe('CrossAppAccessProvider (SDK v2) against serve --trusted-idp, and a workload with --workload-config', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  let idp: EnterpriseIdp;
  let platform: TestIssuer;
  let server: RunningServer;
  let credentials: { client_id: string; client_secret: string; scope: string };

  before(async () => {
    idp = await startEnterpriseIdp();
    platform = await startTestIssuer();
    const rules = join(data, 'workloads.json');
    writeFileSync(
      rules,
      JSON.stringify([
        { issuer: platform.issuer, subject: 'system:serviceaccount:billing:*', client: 'billing-worker', name: 'Billing worker', scopes: ['mcp:tools'] },
      ]),
    );
    server = await startServe([
      '--port',
      String(await freePort()),
      '--data',
      data,
      '--trusted-idp',
      idp.issuer,
      '--workload-config',
      rules,
      '--allow-insecure-idp',
    ]);
    const added = await cli(['clients', 'add', '--name', 'Corp assistant', '--grant-type', 'jwt-bearer', '--data', data, '--json']);
    assert.equal(added.code, 0, added.stderr);
    credentials = JSON.parse(added.stdout) as typeof credentials;
    assert.equal(typeof credentials.client_secret, 'string', 'a confidential client');
    // Nobody consents here to the tokens it gets: only the base scope, as for client_credentials.
    assert.equal(credentials.scope, 'mcp:tools');
    // What the IdP's administrator sets up: the client's id at our authorization server.
    idp.clientMappings.set(server.issuer, credentials.client_id);
  });

  after(async () => {
    await server?.stop();
    await idp?.close();
    await platform?.close();
  });

  it('advertises the grant and the ID-JAG profile', async () => {
    const metadata = (await (await fetch(`${server.issuer}/.well-known/oauth-authorization-server`)).json()) as Record<string, string[]>;
    assert.ok(metadata.grant_types_supported!.includes(JWT_BEARER));
    assert.deepEqual(metadata.authorization_grant_profiles_supported, ['urn:ietf:params:oauth:grant-profile:id-jag']);
  });

  it('connects with an ID-JAG and whoami shows the user made from the IdP identity', async () => {
    const audiences: string[] = [];
    const provider = new CrossAppAccessProvider({
      assertion: async (context) => {
        audiences.push(context.authorizationServerUrl);
        const grant = await requestJwtAuthorizationGrant({
          tokenEndpoint: `${idp.issuer}/token`,
          audience: context.authorizationServerUrl,
          resource: context.resourceUrl,
          idToken: await idp.idToken('employee-7'),
          clientId: idp.clientId,
          clientSecret: idp.clientSecret,
          ...(context.scope ? { scope: context.scope } : {}),
          fetchFn: context.fetchFn,
        });
        return grant.jwtAuthGrant;
      },
      clientId: credentials.client_id,
      clientSecret: credentials.client_secret,
      expectedIssuer: server.issuer,
    });
    const client = new Client({ name: 'enterprise e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.issuer}/mcp`), { authProvider: provider }));
    try {
      const result = await client.callTool({ name: 'whoami' });
      assert.notEqual(result.isError, true, JSON.stringify(result));
      const who = result.structuredContent as Record<string, unknown>;
      assert.equal(who.username, 'trusted-idp:employee-7@example.com');
      assert.equal(who.client_id, credentials.client_id);
      assert.equal(who.resource, `${server.issuer}/mcp`);
      assert.deepEqual(audiences, [server.issuer]);
      assert.equal(provider.tokens()?.refresh_token, undefined, 'no refresh token: the client asks its IdP again');
    } finally {
      await client.close();
    }
    const users = await cli(['users', 'list', '--data', data, '--json']);
    assert.match(users.stdout, /trusted-idp:employee-7@example\.com/);
  });

  it('makes the workload client at start and exchanges a platform token for it, with no client secret', async () => {
    const clients = await cli(['clients', 'list', '--data', data, '--json']);
    assert.match(clients.stdout, /"client_id": "billing-worker"/);
    const now = Math.floor(Date.now() / 1000);
    const token = await platform.sign({ iss: platform.issuer, sub: 'system:serviceaccount:billing:invoicer', aud: server.issuer, iat: now, exp: now + 600 });
    const response = await fetch(`${server.issuer}/token`, { method: 'POST', body: new URLSearchParams({ grant_type: JWT_BEARER, assertion: token }) });
    assert.equal(response.status, 200, await response.clone().text());
    const { access_token: accessToken } = (await response.json()) as { access_token: string };
    const client = new Client({ name: 'workload e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.issuer}/mcp`), { requestInit: { headers: { authorization: `Bearer ${accessToken}` } } }),
    );
    try {
      const who = (await client.callTool({ name: 'whoami' })).structuredContent as Record<string, unknown>;
      assert.equal(who.client_id, 'billing-worker');
      assert.equal(who.subject, 'billing-worker');
    } finally {
      await client.close();
    }
  });

  /** A file only its owner may write, as the client verbs require of a token file. */
  function privateFile(name: string, text: string): string {
    const file = join(data, name);
    writeFileSync(file, text);
    chmodSync(file, 0o600);
    return file;
  }

  it('context-auth call: a workload token file is the grant', async () => {
    const now = Math.floor(Date.now() / 1000);
    const tokenFile = privateFile(
      'workload-token',
      await platform.sign({
        iss: platform.issuer,
        sub: 'system:serviceaccount:billing:reporter',
        aud: server.issuer,
        iat: now,
        exp: now + 600,
        jti: 'cli-workload-1',
      }),
    );
    const called = await cli([
      'call',
      `${server.issuer}/mcp`,
      'tools/call',
      '{"name":"whoami"}',
      '--grant-type',
      'jwt-bearer',
      '--client-id',
      'billing-worker',
      '--assertion-file',
      tokenFile,
      '--credentials',
      join(data, 'workload-credentials.json'),
      '--json',
    ]);
    assert.equal(called.code, 0, called.stderr);
    assert.match(called.stdout, /billing-worker/);
  });

  it('context-auth call: an ID token exchanged at the IdP for an ID-JAG, then the grant', async () => {
    const idTokenFile = privateFile('id-token', await idp.idToken('employee-9'));
    const called = await cli([
      'call',
      `${server.issuer}/mcp`,
      'tools/call',
      '{"name":"whoami"}',
      '--grant-type',
      'jwt-bearer',
      '--client-id',
      credentials.client_id,
      '--client-secret',
      credentials.client_secret,
      '--id-token-file',
      idTokenFile,
      '--idp',
      idp.issuer,
      '--idp-client-id',
      idp.clientId,
      '--idp-client-secret',
      idp.clientSecret,
      '--credentials',
      join(data, 'enterprise-credentials.json'),
      '--json',
    ]);
    assert.equal(called.code, 0, called.stderr || called.stdout);
    assert.match(called.stdout, /trusted-idp:employee-9@example\.com/);
  });
});
