/**
 * The verified identity reaches the handler: Hono (`c.get('auth')`), plain node:http and Express
 * (`req.verifiedToken`, `req.auth`), the MCP SDK's StreamableHTTPServerTransport behind
 * `nodeBearerAuth` (`extra.authInfo`), and a custom TokenVerifier plugged in.
 */
import assert from 'node:assert/strict';
import { createServer, request as createHttpRequest, type ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import express, { type NextFunction, type Request as ExpressRequest, type Response as ExpressResponse } from 'express';
import { Hono } from 'hono';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { honoBearerAuth, honoProtectedResourceMetadata, type AuthVariables } from '../../src/resource-server/adapters/hono.js';
import { nodeBearerAuth, nodeProtectedResourceMetadata, type AuthenticatedRequest } from '../../src/resource-server/adapters/node.js';
import type { ProtectedResource } from '../../src/resource-server/guard.js';
import { tokenRefused, type TokenVerifier, type VerifiedToken } from '../../src/resource-server/types.js';
import { accepted } from '../helpers/token-verification.js';
import { obtainTokens } from '../helpers/harness.js';
import {
  accessToken,
  bearer,
  close,
  createHarness,
  expectDenied,
  ISSUER,
  listen,
  protect,
  RESOURCE,
  REVISIONS,
  toolCall,
  toolResult,
  VERIFIERS,
} from './setup.js';

/** A plain node:http server with the middleware in front of a handler that echoes what it was given. */
function nodeApp(protection: ProtectedResource, requiredScopes?: string[]) {
  const guard = nodeBearerAuth(protection, requiredScopes ? { requiredScopes } : {});
  return createServer((req: AuthenticatedRequest, res: ServerResponse) => {
    guard(req, res, (error?: unknown) => {
      if (error) return void res.writeHead(500).end('error');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ verifiedToken: req.verifiedToken, auth: req.auth }));
    });
  });
}

/** An Express app with the metadata, the guard on /mcp and an MCP server on the SDK's Node transport. */
function expressMcpApp(protection: ProtectedResource) {
  const app = express();
  app.use(nodeProtectedResourceMetadata(protection));
  app.post('/mcp', nodeBearerAuth(protection), express.json(), async (req: ExpressRequest, res: ExpressResponse) => {
    const server = new McpServer({ name: 'express-test', version: '1.0.0' });
    server.registerTool('who', { description: 'the caller' }, (extra) => {
      const info = extra.authInfo;
      const facts = {
        clientId: info?.clientId ?? null,
        scopes: info?.scopes ?? [],
        subject: info?.extra?.subject ?? null,
        resource: info?.resource?.href ?? null,
      };
      return { content: [{ type: 'text', text: JSON.stringify(facts) }], structuredContent: facts };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void transport.close().then(() => server.close()));
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  return createServer(app);
}

for (const revision of REVISIONS) {
  for (const kind of VERIFIERS) {
    describe(`adapters — ${revision.name}, ${kind.name} verifier`, () => {
      it('Hono: the middleware sets c.get("auth") with subject, client, scopes, audience and claims', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const protection = protect(h, verifier);
        const app = new Hono<{ Variables: AuthVariables }>();
        honoProtectedResourceMetadata(app, protection);
        app.use('/mcp/*', honoBearerAuth(protection));
        app.use('/mcp/admin', honoBearerAuth(protection, { requiredScopes: ['mcp:admin'] }));
        app.get('/mcp/me', (c) => {
          const auth = c.get('auth');
          return c.json({ subject: auth.subject, clientId: auth.clientId, scopes: auth.scopes, audience: auth.audience, sub: auth.claims.sub });
        });
        app.get('/mcp/admin', (c) => c.text('admin'));

        const { client, tokens } = await obtainTokens(h, revision);
        const token = String(tokens.access_token);
        const me = await app.fetch(new Request(`${RESOURCE}/me`, { headers: { authorization: bearer(token) } }));
        assert.equal(me.status, 200);
        assert.deepEqual(await me.json(), {
          subject: 'user-alice',
          clientId: client.client_id,
          scopes: ['mcp:tools'],
          audience: [RESOURCE],
          sub: 'user-alice',
        });
        await expectDenied(await app.fetch(new Request(`${RESOURCE}/me`)), 401, 'unauthorized');
        await expectDenied(await app.fetch(new Request(`${RESOURCE}/admin`, { headers: { authorization: bearer(token) } })), 403, 'insufficient_scope');
      });

      it('node:http: (req, res, next) sets req.verifiedToken and req.auth (the SDK AuthInfo)', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const server = nodeApp(protect(h, verifier));
        const base = await listen(server);
        try {
          const { client, tokens } = await obtainTokens(h, revision);
          const token = String(tokens.access_token);
          const response = await fetch(`${base}/mcp`, { headers: { authorization: bearer(token) } });
          assert.equal(response.status, 200);
          const { verifiedToken, auth } = (await response.json()) as { verifiedToken: VerifiedToken; auth: Record<string, unknown> };
          assert.equal(verifiedToken.subject, 'user-alice');
          assert.equal(verifiedToken.clientId, client.client_id);
          assert.deepEqual(verifiedToken.scopes, ['mcp:tools']);
          assert.deepEqual(verifiedToken.audience, [RESOURCE]);
          assert.equal(verifiedToken.issuer, ISSUER);
          assert.equal(auth.token, token);
          assert.equal(auth.clientId, client.client_id);
          assert.deepEqual(auth.scopes, ['mcp:tools']);
          assert.equal(auth.expiresAt, verifiedToken.expiresAt);
          assert.equal(auth.resource, RESOURCE); // a URL, serialised
          assert.equal((auth.extra as Record<string, unknown>).subject, 'user-alice');

          await expectDenied(await fetch(`${base}/mcp`), 401, 'unauthorized');
          await expectDenied(await fetch(`${base}/mcp?access_token=${token}`), 401, 'unauthorized');
          await expectDenied(await fetch(`${base}/mcp`, { headers: { authorization: 'Bearer a b' } }), 400, 'invalid_request');
        } finally {
          await close(server);
        }
      });

      it('Express: the middleware in front of a route, and per-route scopes', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const protection = protect(h, verifier);
        const app = express();
        app.get('/mcp/me', nodeBearerAuth(protection), (req: ExpressRequest, res: ExpressResponse) => {
          const { verifiedToken, auth } = req as AuthenticatedRequest;
          res.json({ subject: verifiedToken?.subject, clientId: auth?.clientId, scopes: auth?.scopes });
        });
        app.get('/mcp/admin', nodeBearerAuth(protection, { requiredScopes: ['mcp:admin'] }), (_req: ExpressRequest, res: ExpressResponse) => {
          res.send('admin');
        });
        const server = createServer(app);
        const base = await listen(server);
        try {
          const { client, tokens } = await obtainTokens(h, revision);
          const headers = { authorization: bearer(String(tokens.access_token)) };
          const me = await fetch(`${base}/mcp/me`, { headers });
          assert.deepEqual(await me.json(), { subject: 'user-alice', clientId: client.client_id, scopes: ['mcp:tools'] });
          await expectDenied(await fetch(`${base}/mcp/me`), 401, 'unauthorized');
          const challenge = await expectDenied(await fetch(`${base}/mcp/admin`, { headers }), 403, 'insufficient_scope');
          assert.equal(challenge.scope, 'mcp:admin');
        } finally {
          await close(server);
        }
      });

      it('Express + the MCP SDK StreamableHTTPServerTransport: a tool sees extra.authInfo', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const server = expressMcpApp(protect(h, verifier));
        const base = await listen(server);
        try {
          const { client, tokens } = await obtainTokens(h, revision);
          const result = await toolResult(await fetch(`${base}/mcp`, toolCall('who', bearer(String(tokens.access_token)))));
          assert.deepEqual(result, { clientId: client.client_id, scopes: ['mcp:tools'], subject: 'user-alice', resource: RESOURCE });
          // Without a token the transport is never reached.
          await expectDenied(await fetch(`${base}/mcp`, toolCall('who')), 401, 'unauthorized');
          const metadata = await fetch(`${base}/.well-known/oauth-protected-resource/mcp`);
          assert.equal(((await metadata.json()) as { resource: string }).resource, RESOURCE);
        } finally {
          await close(server);
        }
      });
    });
  }
}

describe('a custom TokenVerifier plugged in', () => {
  /** Accepts exactly one API key; says the service is down for another; refuses the rest. */
  const custom: TokenVerifier = {
    async verify(token) {
      if (token === 'good-key') {
        return {
          ok: true,
          value: {
            token,
            subject: 'svc-1',
            clientId: 'svc',
            scopes: ['mcp:tools'],
            audience: [RESOURCE],
            issuer: 'https://keys.example',
            expiresAt: 2_000_000_000,
            claims: { kind: 'api-key' },
          },
        };
      }
      if (token === 'down') return tokenRefused('unavailable', 'key service down');
      return tokenRefused('invalid_token', 'unknown key');
    },
  };

  it('works with the guard and the Hono and node adapters', async () => {
    const h = createHarness();
    const protection = protect(h, custom);
    const app = new Hono<{ Variables: AuthVariables }>();
    app.use('/mcp', honoBearerAuth(protection));
    app.get('/mcp', (c) => c.json({ subject: c.get('auth').subject, claims: c.get('auth').claims }));
    const ok = await app.fetch(new Request(RESOURCE, { headers: { authorization: 'Bearer good-key' } }));
    assert.deepEqual(await ok.json(), { subject: 'svc-1', claims: { kind: 'api-key' } });
    await expectDenied(await app.fetch(new Request(RESOURCE, { headers: { authorization: 'Bearer bad-key' } })), 401, 'invalid_token');
    await expectDenied(await app.fetch(new Request(RESOURCE, { headers: { authorization: 'Bearer down' } })), 503, 'temporarily_unavailable');

    const server = nodeApp(protection);
    const base = await listen(server);
    try {
      const response = await fetch(`${base}/mcp`, { headers: { authorization: 'Bearer good-key' } });
      assert.equal(((await response.json()) as { verifiedToken: VerifiedToken }).verifiedToken.subject, 'svc-1');
      await expectDenied(await fetch(`${base}/mcp`, { headers: { authorization: 'Bearer down' } }), 503, 'temporarily_unavailable');
    } finally {
      await close(server);
    }
  });

  it('the guard still checks the audience a custom verifier reports', async () => {
    const h = createHarness();
    const elsewhere: TokenVerifier = {
      verify: async (token) => ({ ok: true, value: { ...(await accepted(custom.verify('good-key'))), token, audience: ['https://other.example/mcp'] } }),
    };
    await expectDenied(await honoFetch(protect(h, elsewhere), 'Bearer anything'), 401, 'invalid_token');
  });

  it('a refusal message with non-ASCII characters still gives a 401 (header-safe challenge)', async () => {
    const h = createHarness();
    const localized: TokenVerifier = { verify: async () => tokenRefused('invalid_token', 'Schlüssel ungültig ✗ — abgelaufen') };
    const protection = protect(h, localized);
    const challenge = await expectDenied(await honoFetch(protection, 'Bearer x'), 401, 'invalid_token');
    assert.match(challenge.error_description ?? '', /ung/);
    const server = nodeApp(protection);
    const base = await listen(server);
    try {
      await expectDenied(await fetch(`${base}/mcp`, { headers: { authorization: 'Bearer x' } }), 401, 'invalid_token');
    } finally {
      await close(server);
    }
  });

  it('an unexpected verifier error reaches next(error) in Express (its error handler answers)', async () => {
    const h = createHarness();
    const broken: TokenVerifier = { verify: () => Promise.reject(new Error('verifier bug')) };
    const app = express();
    app.get('/mcp', nodeBearerAuth(protect(h, broken)), (_req: ExpressRequest, res: ExpressResponse) => void res.send('unreachable'));
    app.use((error: Error, _req: ExpressRequest, res: ExpressResponse, _next: NextFunction) => void res.status(500).json({ caught: error.message }));
    const server = createServer(app);
    const base = await listen(server);
    try {
      const response = await fetch(`${base}/mcp`, { headers: { authorization: 'Bearer x' } });
      assert.equal(response.status, 500);
      assert.deepEqual(await response.json(), { caught: 'verifier bug' });
    } finally {
      await close(server);
    }
  });
});

async function honoFetch(protection: ProtectedResource, authorization: string): Promise<Response> {
  const app = new Hono<{ Variables: AuthVariables }>();
  app.use('/mcp', honoBearerAuth(protection));
  app.get('/mcp', (c) => c.text('ok'));
  return app.fetch(new Request(RESOURCE, { headers: { authorization } }));
}

describe('a token is accepted for a whole logical session only while valid', () => {
  for (const revision of REVISIONS) {
    it(`every request carries and re-proves the token (${revision.name})`, async () => {
      const h = createHarness();
      const { verifier } = await VERIFIERS[0]!.create(h);
      const app = new Hono<{ Variables: AuthVariables }>();
      app.use('/mcp', honoBearerAuth(protect(h, verifier)));
      app.post('/mcp', (c) => c.text('ok'));
      const token = await accessToken(h, revision);
      assert.equal((await app.fetch(new Request(RESOURCE, { method: 'POST', headers: { authorization: bearer(token) } }))).status, 200);
      // Same "session", no header: refused; the server keeps no login state.
      await expectDenied(await app.fetch(new Request(RESOURCE, { method: 'POST', headers: { 'mcp-session-id': 'abc' } })), 401, 'unauthorized');
    });
  }
});

describe('Hono under @hono/node-server: the Authorization header as sent', () => {
  /** POSTs with the given header lines, each [name, value] sent as its own line. */
  function post(url: string, lines: [string, string][]): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const request = createHttpRequest(url, { method: 'POST' }, (response) => {
        let text = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode!, text }));
      });
      const byName = new Map<string, string[]>();
      for (const [name, value] of lines) byName.set(name, [...(byName.get(name) ?? []), value]);
      for (const [name, values] of byName) request.setHeader(name, values.length === 1 ? values[0]! : values);
      request.on('error', reject).end('{}');
    });
  }

  it('one header is used as sent; two are refused as malformed (400), as the Web Request would', async () => {
    const h = createHarness();
    const protection = protect(h, (await VERIFIERS[0]!.create(h)).verifier);
    const app = new Hono<{ Variables: AuthVariables }>();
    app.post('/mcp', honoBearerAuth(protection), (c) => c.json({ subject: c.get('auth').subject }));
    const { serve } = await import('@hono/node-server');
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise((resolve) => server.once('listening', resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`;
    try {
      const valid = bearer(await accessToken(h, REVISIONS[0]!));
      const one = await post(url, [['Authorization', valid]]);
      assert.equal(one.status, 200, one.text);
      assert.equal((await post(url, [['authorization', 'Bearer not-a-jwt']])).status, 401);
      assert.equal((await post(url, [['x-other', 'y']])).status, 401, 'no Authorization: no token');
      const two = await post(url, [
        ['Authorization', valid],
        ['Authorization', 'Bearer x'],
      ]);
      assert.equal(two.status, 400, `a second Authorization header must not be ignored: ${two.text}`);
    } finally {
      server.close();
      (server as unknown as { closeAllConnections(): void }).closeAllConnections();
    }
  });
});
