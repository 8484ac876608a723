/**
 * Discovery against real servers: Revision B through the 401 and the protected resource metadata,
 * Revision A through the base URL's metadata (with Context-Protocol-Version), and Revision A's
 * default endpoints when that metadata is 404.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { discover, REVISION_A_VERSION } from '../../src/client/discovery.js';
import { findBearerChallenge } from '../../src/core/www-authenticate.js';
import { clientError, clientFor, MODES, person, recordingFetch, startContextServer, type ContextServer, type Mode, type SentRequest } from './setup.js';

describe('the three server shapes, as a client first meets them', () => {
  const servers = new Map<Mode, ContextServer>();
  before(async () => {
    for (const mode of MODES) servers.set(mode, await startContextServer({ mode }));
  });
  after(async () => {
    for (const server of servers.values()) await server.close();
  });

  for (const mode of MODES) {
    it(`${mode}: a token-less request gets 401${mode === 'B' ? ' naming the resource metadata' : ' without resource_metadata'}`, async () => {
      const server = servers.get(mode)!;
      const response = await fetch(server.serverUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      assert.equal(response.status, 401);
      await response.body?.cancel();
      const challenge = findBearerChallenge(response.headers.get('www-authenticate'));
      assert.ok(challenge);
      assert.equal(challenge.scope, 'mcp:tools');
      if (mode === 'B') assert.equal(challenge.resource_metadata, `${server.origin}/.well-known/oauth-protected-resource/mcp`);
      else assert.equal(challenge.resource_metadata, undefined);

      const prm = await fetch(`${server.origin}/.well-known/oauth-protected-resource/mcp`);
      assert.equal(prm.status, mode === 'B' ? 200 : 404);
      await prm.body?.cancel();
      const asMetadata = await fetch(`${server.origin}/.well-known/oauth-authorization-server`);
      assert.equal(asMetadata.status, mode === 'metadata-404' ? 404 : 200);
      await asMetadata.body?.cancel();
    });
  }

  it('B: discover() follows the 401 to the resource metadata and the authorization server', async () => {
    const server = servers.get('B')!;
    const sent: SentRequest[] = [];
    const found = await discover(server.serverUrl, { fetch: recordingFetch(sent) });
    assert.equal(found.revision, 'B');
    assert.equal(found.serverUrl, server.serverUrl);
    assert.equal(found.resource, server.serverUrl);
    assert.equal(found.resourceMetadataUrl, `${server.origin}/.well-known/oauth-protected-resource/mcp`);
    assert.deepEqual(found.authorizationServers, [server.issuer]);
    assert.equal(found.issuer, server.issuer);
    assert.equal(found.authorizationServer.token_endpoint, `${server.origin}/token`);
    assert.equal(found.challengeScope, 'mcp:tools');
    // The resource metadata names none here, so the authorization server's: its scopes and OpenID's.
    assert.deepEqual(found.scopesSupported, ['mcp:tools', 'mcp:admin', 'openid', 'profile', 'email']);
    assert.deepEqual(
      sent.map((r) => `${r.method} ${r.url.pathname}`),
      ['POST /mcp', 'GET /.well-known/oauth-protected-resource/mcp', 'GET /.well-known/oauth-authorization-server'],
    );
    for (const request of sent) assert.equal(request.headers.get('authorization'), null);
  });

  it('A: discover() finds no resource metadata and reads the base URL’s, announcing Context-Protocol-Version', async () => {
    const server = servers.get('A')!;
    const sent: SentRequest[] = [];
    const found = await discover(server.serverUrl, { fetch: recordingFetch(sent) });
    assert.equal(found.revision, 'A');
    assert.equal(found.resource, undefined);
    assert.equal(found.resourceMetadataUrl, undefined);
    assert.equal(found.issuer, server.issuer);
    assert.equal(found.authorizationServer.authorization_endpoint, `${server.origin}/authorize`);
    assert.equal(found.authorizationServer.registration_endpoint, `${server.origin}/register`);
    assert.equal(found.challengeScope, 'mcp:tools');
    const metadata = sent.filter((r) => r.url.pathname === '/.well-known/oauth-authorization-server');
    assert.equal(metadata.length, 1);
    assert.equal(metadata[0]!.headers.get('context-protocol-version'), REVISION_A_VERSION);
    assert.match(REVISION_A_VERSION, /^\d{4}-\d{2}-\d{2}$/);
    // The server saw it too.
    const seen = server.seen.filter((r) => r.path === '/.well-known/oauth-authorization-server').at(-1);
    assert.equal(seen?.headers.get('context-protocol-version'), REVISION_A_VERSION);
  });

  it('metadata 404: discover() falls back to /authorize, /token and /register at the base URL', async () => {
    const server = servers.get('metadata-404')!;
    const sent: SentRequest[] = [];
    const steps: string[] = [];
    const found = await discover(server.serverUrl, { fetch: recordingFetch(sent), onStep: (step) => steps.push(step) });
    assert.equal(found.revision, 'A');
    assert.equal(found.issuer, server.origin);
    assert.deepEqual(
      {
        authorization: found.authorizationServer.authorization_endpoint,
        token: found.authorizationServer.token_endpoint,
        registration: found.authorizationServer.registration_endpoint,
      },
      { authorization: `${server.origin}/authorize`, token: `${server.origin}/token`, registration: `${server.origin}/register` },
    );
    assert.equal(sent.find((r) => r.url.pathname === '/.well-known/oauth-authorization-server')?.headers.get('context-protocol-version'), REVISION_A_VERSION);
    assert.ok(
      steps.some((step) => /404/.test(step)),
      steps.join('\n'),
    );
  });

  it('accepts the server URL in another spelling (upper-case scheme and host, trailing slash) as the same server', async () => {
    const server = servers.get('B')!;
    const shouted = server.serverUrl.replace('http://127.0.0.1', 'HTTP://127.0.0.1');
    const found = await discover(`${shouted}/`);
    assert.equal(found.serverUrl, server.serverUrl);
    assert.equal(found.resource, server.serverUrl);
  });

  it('with a known challenge, discovery does not probe the server again', async () => {
    const server = servers.get('B')!;
    const sent: SentRequest[] = [];
    await discover(server.serverUrl, {
      fetch: recordingFetch(sent),
      wwwAuthenticate: `Bearer resource_metadata="${server.origin}/.well-known/oauth-protected-resource/mcp", scope="mcp:tools"`,
    });
    assert.equal(sent.filter((r) => r.url.pathname === '/mcp').length, 0);
  });

  it('ContextClient.discover() is done once per instance', async () => {
    const server = servers.get('B')!;
    const sent: SentRequest[] = [];
    const client = clientFor(server, person(), {}, sent);
    const [a, b] = await Promise.all([client.discover(), client.discover()]);
    assert.equal(a, b);
    await client.discover();
    assert.equal(sent.filter((r) => r.url.pathname === '/mcp').length, 1);
  });
});

describe('several authorization servers', () => {
  let server: ContextServer;
  let listed: (origin: string) => string[] = (origin) => ['http://127.0.0.1:1', origin];
  before(async () => {
    server = await startContextServer({
      routes: (app, origin) =>
        app.get('/.well-known/oauth-protected-resource/mcp', (c) =>
          c.json({ resource: `${origin}/mcp`, authorization_servers: listed(origin), scopes_supported: ['mcp:tools'] }),
        ),
    });
  });
  after(() => server.close());

  it('the first whose metadata loads wins; chooseAuthorizationServers orders them', async () => {
    // The first listed is not running: the client moves on to the next.
    const found = await discover(server.serverUrl);
    assert.equal(found.issuer, server.issuer);
    assert.deepEqual(found.authorizationServers, ['http://127.0.0.1:1', server.issuer]);

    const offered: string[][] = [];
    const chosen = await discover(server.serverUrl, {
      chooseAuthorizationServers: (servers) => {
        offered.push(servers);
        return [...servers].reverse();
      },
    });
    assert.equal(chosen.issuer, server.issuer);
    assert.deepEqual(offered, [['http://127.0.0.1:1', server.issuer]]);

    // And a whole login works through it.
    const grant = await clientFor(server, person()).login();
    assert.equal(grant.issuer, server.issuer);
    assert.equal(grant.revision, 'B');
  });

  it('none usable: the shared failure is named (discovery_failed), else no_authorization_server listing each', async () => {
    try {
      listed = () => ['http://127.0.0.1:1'];
      await assert.rejects(discover(server.serverUrl), clientError('discovery_failed', /127\.0\.0\.1:1/));
      listed = () => ['http://127.0.0.1:1', 'http://auth.example'];
      await assert.rejects(discover(server.serverUrl), clientError('no_authorization_server', /127\.0\.0\.1:1.*auth\.example/));
      listed = () => [];
      await assert.rejects(discover(server.serverUrl), clientError('metadata_mismatch', /authorization_servers/));
    } finally {
      listed = (origin) => ['http://127.0.0.1:1', origin];
    }
  });
});
