/**
 * `runDoctor` against deployments written wrong on purpose (test/helpers/deployments.ts), each
 * diagnosed with the hosts it stops, the step and the reason, and against oidc-provider behind a
 * small protected resource (a Hono app with the guard of context-auth/resource-server).
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { cors } from 'hono/cors';
import { runDoctor, type DoctorReport } from '../../src/client/index.js';
import { HOST_PROFILES, hostNames } from '../../src/client/hosts/profiles.js';
import { honoBearerAuth, honoProtectedResourceMetadata, jwtVerifier, protectedResource } from '../../src/resource-server/index.js';
import { MCP_URL, OTHER_ORIGIN, startDeployment, type DeploymentFlaws } from '../helpers/deployments.js';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.js';

const ALL_HOSTS = hostNames(HOST_PROFILES);

/** Each host that does not connect, with the step it stops at. */
function stopped(report: DoctorReport): Record<string, string> {
  return Object.fromEntries(report.hosts.filter((host) => !host.connects).map((host) => [host.host, host.failure!.step]));
}

function verdict(report: DoctorReport, host: string) {
  const found = report.hosts.find((h) => h.host === host);
  assert.ok(found, `no verdict for ${host}`);
  return found;
}

function check(report: DoctorReport, name: string) {
  const found = report.checks.find((c) => c.check === name);
  assert.ok(found, `no check ${name}: ${report.checks.map((c) => c.check).join(', ')}`);
  return found;
}

async function diagnose(flaws: DeploymentFlaws, origin?: string): Promise<DoctorReport> {
  const deployment = await startDeployment(flaws, origin);
  try {
    return await runDoctor(origin ? `${origin}/mcp` : MCP_URL, { fetch: deployment.fetch });
  } finally {
    await deployment.close();
  }
}

describe('doctor diagnoses deployments written wrong on purpose', () => {
  it('a deployment without flaws: every host connects, each by the way it prefers', async () => {
    const report = await diagnose({});
    assert.deepEqual(stopped(report), {});
    assert.equal(report.connects, true);
    assert.deepEqual(
      report.hosts.map((h) => h.host),
      ALL_HOSTS,
    );
    assert.equal(verdict(report, 'ChatGPT').profile, 'chatgpt-private-key-jwt');
    assert.equal(verdict(report, 'Claude').profile, 'claude-document');
    assert.equal(verdict(report, 'Codex').profile, 'codex-document');
    assert.equal(verdict(report, 'Cursor').profile, 'cursor-registration');
    assert.deepEqual(
      report.checks.filter((c) => c.result !== 'ok' && c.result !== 'info'),
      [],
    );
    // Nothing was registered, and no request carried credentials.
    assert.deepEqual(report.registrations, []);
    assert.ok(report.requests.every((request) => !Object.keys(request.headers ?? {}).some((name) => name.toLowerCase() === 'authorization')));
  });

  it('the issuer in the metadata is not the URL it was found under: Codex and Goose refuse it', async () => {
    const report = await diagnose({ issuer: 'https://login.example.com' });
    assert.deepEqual(stopped(report), { Codex: 'issuer', Goose: 'issuer' });
    assert.match(verdict(report, 'Codex').failure!.answered, /names the issuer https:\/\/login\.example\.com, not https:\/\/mcp\.example\.com/);
    assert.match(verdict(report, 'Codex').failure!.fix, /make issuer exactly https:\/\/mcp\.example\.com/);
    assert.equal(check(report, 'issuer (RFC 8414)').result, 'fails');
  });

  it('no `none` among the token endpoint methods: Claude, Claude Code and Codex register instead; public documents stop', async () => {
    const report = await diagnose({ authMethods: ['client_secret_basic', 'client_secret_post', 'private_key_jwt'] });
    assert.deepEqual(stopped(report), { 'VS Code': 'client authentication', 'Copilot CLI': 'client authentication', Goose: 'client authentication' });
    assert.equal(verdict(report, 'Claude').profile, 'claude-registration');
    assert.equal(verdict(report, 'Claude Code').profile, 'claude-code-registration');
    assert.equal(verdict(report, 'Codex').profile, 'codex-registration');
    assert.equal(verdict(report, 'ChatGPT').profile, 'chatgpt-private-key-jwt');
    assert.match(verdict(report, 'VS Code').failure!.answered, /does not list none in token_endpoint_auth_methods_supported/);
    assert.equal(check(report, 'none (public clients)').result, 'warning');
  });

  it('a trailing slash on the resource: VS Code, Gemini CLI, Codex and Goose refuse the metadata', async () => {
    const report = await diagnose({ resource: `${MCP_URL}/` });
    assert.deepEqual(stopped(report), { 'VS Code': 'resource', Codex: 'resource', 'Gemini CLI': 'resource', Goose: 'resource' });
    assert.match(verdict(report, 'VS Code').failure!.answered, /names https:\/\/mcp\.example\.com\/mcp\/, not https:\/\/mcp\.example\.com\/mcp/);
    assert.equal(check(report, 'resource').result, 'fails');
  });

  it('the protected resource metadata only at the root: ChatGPT, which reads only the path form, stops', async () => {
    const report = await diagnose({ metadataAt: ['root'], challengeNames: 'root' });
    assert.deepEqual(stopped(report), { ChatGPT: 'protected resource metadata' });
    assert.match(verdict(report, 'ChatGPT').failure!.answered, /oauth-protected-resource\/mcp 404/);
    assert.equal(check(report, 'protected resource metadata (path form)').result, 'fails');
  });

  it('no RFC 9207 iss: every host still connects (ChatGPT and Codex use a redirect per server); the check says so', async () => {
    const report = await diagnose({ noIss: true });
    assert.deepEqual(stopped(report), {});
    assert.equal(check(report, 'RFC 9207 iss').result, 'warning');
    assert.match(check(report, 'RFC 9207 iss').detail, /ChatGPT and Codex then use a redirect URI per server/);
  });

  it('a 401 that names no resource_metadata, and no metadata at the well-known URLs: every host stops there', async () => {
    const report = await diagnose({ challengeNames: 'nothing', metadataAt: [] });
    assert.deepEqual(stopped(report), Object.fromEntries(ALL_HOSTS.map((host) => [host, 'protected resource metadata'])));
    assert.equal(check(report, '401 challenge').result, 'fails');
    assert.match(check(report, '401 challenge').detail, /401 without resource_metadata/);
  });

  it('a 401 without resource_metadata, the metadata at the well-known URLs: hosts find it there; the check still fails', async () => {
    const report = await diagnose({ challengeNames: 'nothing' });
    assert.deepEqual(stopped(report), {});
    assert.equal(check(report, '401 challenge').result, 'fails');
  });

  it('resource_metadata on another origin: Codex and Goose ignore it and find nothing on the MCP origin (nor does ChatGPT, which reads only the path form)', async () => {
    const report = await diagnose({ challengeNames: 'other-origin', metadataAt: ['other-origin'] });
    assert.deepEqual(stopped(report), { ChatGPT: 'protected resource metadata', Codex: 'protected resource metadata', Goose: 'protected resource metadata' });
    assert.match(
      verdict(report, 'Codex').failure!.answered,
      new RegExp(`ignored the 401's resource_metadata on another origin \\(${OTHER_ORIGIN}/mcp-metadata\\)`),
    );
    assert.match(verdict(report, 'Codex').failure!.fix, /on https:\/\/mcp\.example\.com too/);
    assert.equal(check(report, '401 challenge').result, 'warning');
  });

  it('plain http on a public host name: ChatGPT, Claude and mcp-remote stop', async () => {
    const report = await diagnose({}, 'http://mcp.example.com');
    assert.deepEqual(stopped(report), { ChatGPT: 'reachability', Claude: 'reachability', 'mcp-remote': 'reachability' });
    assert.equal(check(report, 'https').result, 'fails');
  });

  it('no client ID metadata documents: ChatGPT and Copilot CLI stop at registration; the others register', async () => {
    const report = await diagnose({ documents: false });
    assert.deepEqual(stopped(report), { ChatGPT: 'registration', 'Copilot CLI': 'registration' });
    assert.match(verdict(report, 'ChatGPT').failure!.answered, /does not advertise client_id_metadata_document_supported/);
  });

  it('only `none`: ChatGPT takes its public-client way', async () => {
    const report = await diagnose({ authMethods: ['none'] });
    assert.deepEqual(stopped(report), {});
    assert.equal(verdict(report, 'ChatGPT').profile, 'chatgpt-public-client');
  });

  it('offline_access not listed: ChatGPT asks for it anyway and stops at scope', async () => {
    const report = await diagnose({ scopes: ['mcp:tools'] });
    assert.deepEqual(stopped(report), { ChatGPT: 'scope' });
    assert.match(verdict(report, 'ChatGPT').failure!.fix, /list offline_access in scopes_supported and accept it/);
  });

  it('no CORS headers: the MCP Inspector, a browser page, cannot read the 401', async () => {
    const report = await diagnose({ noCors: true });
    assert.deepEqual(stopped(report), { 'MCP Inspector': 'CORS' });
    assert.match(verdict(report, 'MCP Inspector').failure!.answered, /no Access-Control-Allow-Origin for http:\/\/localhost:6274/);
  });

  it('metadata that never finishes, or is far too long: read within the time limit and the size bound, and said so', async () => {
    const deployment = await startDeployment({ resourceMetadataAnswer: 'never' });
    try {
      const report = await runDoctor(MCP_URL, { fetch: deployment.fetch, timeoutMs: 300 });
      assert.equal(verdict(report, 'VS Code').failure!.step, 'protected resource metadata');
      assert.match(verdict(report, 'VS Code').failure!.answered, /oauth-protected-resource\/mcp 200, its body unfinished within the time limit/);
    } finally {
      await deployment.close();
    }
    const huge = await diagnose({ resourceMetadataAnswer: 'huge' });
    assert.match(verdict(huge, 'VS Code').failure!.answered, /oauth-protected-resource\/mcp 200, over 256 KiB/);
  });

  it('PKCE without S256: every host stops', async () => {
    const report = await diagnose({ pkce: ['plain'] });
    assert.deepEqual(stopped(report), Object.fromEntries(ALL_HOSTS.map((host) => [host, 'PKCE'])));
    assert.equal(check(report, 'PKCE S256').result, 'fails');
  });

  it('--register: each host that registers dynamically registers its own body, and is listed', async () => {
    const deployment = await startDeployment({});
    try {
      const report = await runDoctor(MCP_URL, { fetch: deployment.fetch, register: true });
      assert.deepEqual(
        report.registrations.map((r) => r.host),
        ['Cursor', 'Gemini CLI', 'mcp-remote', 'MCP Inspector'],
      );
      assert.ok(report.registrations.every((r) => r.clientId !== undefined && r.deleted === undefined));
      const bodies = deployment.registrations as Record<string, unknown>[];
      assert.equal(bodies[1]!.client_name, 'Gemini CLI MCP Client');
      assert.equal(bodies[1]!.scope, 'mcp:tools offline_access', 'Gemini CLI asks for every scope the server lists');
      assert.deepEqual(deployment.deleted, []);
    } finally {
      await deployment.close();
    }
  });

  it("--register: a refused registration stops its host, with the server's error and the fix", async () => {
    const deployment = await startDeployment({ httpRedirectsOnly: true });
    try {
      const report = await runDoctor(MCP_URL, { fetch: deployment.fetch, register: true });
      assert.deepEqual(stopped(report), { Cursor: 'registration' });
      const cursor = verdict(report, 'Cursor').failure!;
      assert.match(cursor.answered, /400 invalid_redirect_uri: scheme not allowed: cursor:\/\/anysphere\.cursor-mcp\/oauth\/callback/);
      assert.match(cursor.fix, /--allow-redirect-scheme cursor/);
      assert.equal(report.registrations.find((r) => r.host === 'Cursor')!.clientId, undefined);
    } finally {
      await deployment.close();
    }
  });

  it('--register: a registration the server lets its client manage (RFC 7592) is deleted again, its token sent only there', async () => {
    const deployment = await startDeployment({ manageable: true });
    try {
      const report = await runDoctor(MCP_URL, { fetch: deployment.fetch, register: true });
      assert.ok(report.registrations.every((r) => r.deleted === true));
      assert.deepEqual(
        deployment.deleted,
        report.registrations.map((r) => ({ clientId: r.clientId, authorization: `Bearer management-${r.clientId}` })),
      );
    } finally {
      await deployment.close();
    }
  });
});

describe('doctor against oidc-provider behind a protected resource', () => {
  let idp: TestOidcProvider;
  let resourceServer: ServerType;
  let mcpUrl: string;

  before(async () => {
    idp = await startOidcProvider({ redirectUris: ['http://127.0.0.1:9/callback'], deviceFlow: true });
    const app = new Hono();
    const port = await new Promise<number>((resolve) => {
      resourceServer = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => resolve(info.port));
    });
    mcpUrl = `http://127.0.0.1:${port}/mcp`;
    const protection = protectedResource({
      resource: mcpUrl,
      authorizationServers: [idp.issuer],
      scopesSupported: ['read:user'],
      verifier: jwtVerifier({ authorizationServers: [idp.issuer] }),
    });
    // What a context server that wants the Inspector (a browser page) adds.
    app.use(cors({ origin: '*', exposeHeaders: ['WWW-Authenticate'] }));
    honoProtectedResourceMetadata(app, protection);
    app.all('/mcp', honoBearerAuth(protection), (c) => c.json({ jsonrpc: '2.0', id: 1, result: {} }));
  });
  after(async () => {
    await new Promise<void>((resolve) => resourceServer.close(() => resolve()));
    await idp.stop();
  });

  it('hosts that register connect; ChatGPT and Claude cannot reach loopback; Copilot CLI needs documents oidc-provider does not offer', async () => {
    const report = await runDoctor(mcpUrl);
    assert.deepEqual(stopped(report), { ChatGPT: 'reachability', Claude: 'reachability', 'Copilot CLI': 'registration' });
    for (const host of ['Claude Code', 'Codex', 'VS Code', 'Goose']) assert.equal(verdict(report, host).way, 'registration', host);
    assert.equal(check(report, 'OpenID discovery').result, 'ok');
    assert.equal(check(report, 'client ID metadata documents').result, 'warning');
  });
});
