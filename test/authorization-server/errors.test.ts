/**
 * http/errors.ts, the one place an error becomes a response: a redirect when the error carries a
 * trusted target, else a page on the browser routes, else OAuth JSON. And the layering that keeps
 * it the one place: no endpoint renders an error, none imports another.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { OAuthError, type TrustedRedirect } from '../../src/core/errors.js';
import { errorAnswer } from '../../src/authorization-server/http/errors.js';
import { toWebResponse } from '../../src/authorization-server/http/responses.js';

const errorResponse = (thrown: unknown, format: 'json' | 'html', log: Parameters<typeof errorAnswer>[2]): Response =>
  toWebResponse(errorAnswer(thrown, format, log));
import { StoreError } from '../../src/store/store.js';
import { authorizationRequest, authorizeUrl, Browser, createHarness, ISSUER, registerClient, REVISIONS } from '../helpers/harness.js';

const TARGET: TrustedRedirect = { uri: 'http://127.0.0.1:33333/callback', state: 'a b&c', iss: ISSUER };

function collect(): { log: (event: Record<string, unknown>) => void; events: Record<string, unknown>[] } {
  const events: Record<string, unknown>[] = [];
  return { log: (event) => events.push(event), events };
}

describe('errorResponse', () => {
  describe('JSON (API routes)', () => {
    it('answers with the status, the headers and code and description only', async () => {
      const error = new OAuthError('invalid_client', 'unknown client', 401, { 'WWW-Authenticate': 'Basic realm="x"' }).withUserMessage('Not for JSON.');
      const response = errorResponse(error, 'json', collect().log);
      assert.equal(response.status, 401);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(response.headers.get('cache-control'), 'no-store');
      assert.equal(response.headers.get('www-authenticate'), 'Basic realm="x"');
      assert.deepEqual(await response.json(), { error: 'invalid_client', error_description: 'unknown client' });
    });

    it('hides what went wrong inside: a 500 whose message is only in the log', async () => {
      const { log, events } = collect();
      const response = errorResponse(new Error('connection string postgres://secret@db'), 'json', log);
      assert.equal(response.status, 500);
      const text = await response.text();
      assert.equal(JSON.parse(text).error, 'server_error');
      assert.doesNotMatch(text, /secret/);
      assert.deepEqual(events, [{ event: 'internal_error', message: 'connection string postgres://secret@db' }]);
    });

    it('makes the store being down a 503 with Retry-After', async () => {
      const { log, events } = collect();
      const response = errorResponse(new StoreError('unavailable', 'pool exhausted'), 'json', log);
      assert.equal(response.status, 503);
      assert.equal(response.headers.get('retry-after'), '5');
      assert.equal(((await response.json()) as { error: string }).error, 'temporarily_unavailable');
      assert.equal(events[0]?.event, 'store_unavailable');
    });
  });

  describe('HTML (browser routes, no trusted redirect)', () => {
    it('shows the message for the person with the code, as a page with the page headers', async () => {
      const error = new OAuthError('invalid_request', 'the csrf token does not match', 403).withUserMessage('Reload <the> page.');
      const response = errorResponse(error, 'html', collect().log);
      assert.equal(response.status, 403);
      assert.equal(response.headers.get('location'), null);
      assert.match(response.headers.get('content-type') ?? '', /^text\/html; charset=utf-8$/);
      assert.match(response.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
      assert.equal(response.headers.get('x-frame-options'), 'DENY');
      assert.equal(response.headers.get('referrer-policy'), 'same-origin');
      assert.equal(response.headers.get('cache-control'), 'no-store');
      const html = await response.text();
      assert.match(html, /role="alert">Reload &lt;the&gt; page\.</);
      assert.match(html, /<code>invalid_request<\/code>/);
      assert.doesNotMatch(html, /csrf token/, 'the description is for developers, not the page');
    });

    it('shows the description when no message for the person was set', async () => {
      const response = errorResponse(new OAuthError('invalid_request', 'The request names no client.'), 'html', collect().log);
      assert.equal(response.status, 400);
      assert.match(await response.text(), /role="alert">The request names no client\.</);
    });

    it('shows a 500 page without internals for anything unexpected', async () => {
      const response = errorResponse(new TypeError('x is undefined at secret.ts:1'), 'html', collect().log);
      assert.equal(response.status, 500);
      assert.equal(response.headers.get('location'), null);
      const html = await response.text();
      assert.match(html, /<code>server_error<\/code>/);
      assert.doesNotMatch(html, /secret\.ts/);
    });
  });

  describe('redirect (a trusted target)', () => {
    it('is a 303 to the redirect URI with error, error_description, state and iss, in that order', () => {
      const error = new OAuthError('invalid_scope', 'scope not allowed: x').withUserMessage('Not for the client.').redirectTo(TARGET);
      const response = errorResponse(error, 'html', collect().log);
      assert.equal(response.status, 303);
      assert.equal(response.headers.get('cache-control'), 'no-store');
      assert.equal(response.headers.get('referrer-policy'), 'no-referrer');
      const location = new URL(response.headers.get('location')!);
      assert.equal(`${location.origin}${location.pathname}`, TARGET.uri);
      assert.deepEqual(
        [...location.searchParams],
        [
          ['error', 'invalid_scope'],
          ['error_description', 'scope not allowed: x'],
          ['state', 'a b&c'],
          ['iss', ISSUER],
        ],
      );
    });

    it('leaves state out when the request had none, and keeps the query the redirect URI had', () => {
      const error = new OAuthError('login_required', 'the user is not signed in').redirectTo({
        uri: 'https://app.example.com/cb?tenant=7',
        state: null,
        iss: ISSUER,
      });
      const location = new URL(errorResponse(error, 'html', collect().log).headers.get('location')!);
      assert.deepEqual([...location.searchParams.keys()], ['tenant', 'error', 'error_description', 'iss']);
      assert.equal(location.searchParams.get('tenant'), '7');
    });

    it('wins over the route format: the error itself says where it goes', () => {
      const error = new OAuthError('access_denied', 'the user denied the request').redirectTo(TARGET);
      assert.equal(errorResponse(error, 'json', collect().log).status, 303);
    });

    it('is never taken by an error without a target, whatever its code', () => {
      for (const format of ['html', 'json'] as const) {
        const response = errorResponse(new OAuthError('access_denied', 'the user denied the request'), format, collect().log);
        assert.equal(response.headers.get('location'), null);
        assert.equal(response.status, 403);
      }
    });
  });
});

describe('errors before the redirect URI is trusted are pages, never redirects', () => {
  for (const revision of REVISIONS) {
    it(`an unregistered redirect_uri with other errors too — ${revision.name}`, async () => {
      const h = createHarness();
      const client = await registerClient(h);
      for (const redirectUri of ['https://attacker.example/callback', 'http://127.0.0.1:33333/callback/', 'javascript:alert(1)']) {
        const params = authorizationRequest(client, revision, { redirect_uri: redirectUri, response_type: 'token', prompt: 'none', scope: 'nope' }).params;
        const response = await new Browser(h).fetch(authorizeUrl(params));
        assert.equal(response.status, 400, redirectUri);
        assert.equal(response.headers.get('location'), null, redirectUri);
        assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
        assert.match(await response.text(), /<code>invalid_request<\/code>/);
      }
    });
  }

  it('a store outage while checking the client: a 503 page, not a redirect', async () => {
    const h = createHarness();
    const client = await registerClient(h);
    h.store.getClient = async () => {
      throw new StoreError('unavailable', 'down');
    };
    const response = await new Browser(h).fetch(authorizeUrl(authorizationRequest(client, REVISIONS[0]).params));
    assert.equal(response.status, 503);
    assert.equal(response.headers.get('location'), null);
    assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
  });
});

describe('layering', () => {
  const dir = new URL('../../src/authorization-server/endpoints/', import.meta.url);
  const endpoints = readdirSync(dir).filter((name) => name.endsWith('.ts'));

  for (const name of endpoints) {
    it(`endpoints/${name} imports no other endpoint and renders no error itself`, () => {
      const source = readFileSync(new URL(name, dir), 'utf8');
      assert.doesNotMatch(source, /from '\.\//, 'endpoints share code through modules below them');
      assert.doesNotMatch(source, /pages\/error\.js|authorizationResponseUrl|errorJson/, 'errors are thrown; http/errors.ts renders them');
    });
  }
});
