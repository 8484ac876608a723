import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, it } from 'node:test';
import { ClientError } from '../../src/client/errors.js';
import { startLoopback } from '../../src/client/loopback.js';

/** Whether anything accepts connections on the redirect URI's port. */
function isListening(redirectUri: string): Promise<boolean> {
  const { port } = new URL(redirectUri);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

const isClientError =
  (code: string) =>
  (error: unknown): boolean => {
    assert.ok(error instanceof ClientError, String(error));
    assert.equal(error.code, code);
    return true;
  };

describe('loopback callback', () => {
  it('delivers code and state, answers with a self-contained page, then closes', async () => {
    const callback = await startLoopback();
    assert.match(callback.redirectUri, /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    callback.expectState('xyz');
    const response = await fetch(`${callback.redirectUri}?code=abc&state=xyz&iss=https%3A%2F%2Fauth.example`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    assert.match(response.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    assert.equal(response.headers.get('referrer-policy'), 'no-referrer');
    const html = await response.text();
    assert.match(html, /<h1 class="ok">Signed in<\/h1><p>You can close this window and return to the terminal\.<\/p>/);
    assert.equal(html.match(/Signed in/g)?.length, 2, 'the title and the heading, not a third time');
    assert.doesNotMatch(html, /<script|src=|href=/);
    const params = await callback.wait();
    assert.equal(params.get('code'), 'abc');
    assert.equal(params.get('state'), 'xyz');
    assert.equal(params.get('iss'), 'https://auth.example');
    assert.equal(await isListening(callback.redirectUri), false);
    await callback.close();
  });

  it('delivers an error, shown escaped', async () => {
    const callback = await startLoopback({ path: '/oauth/done' });
    assert.match(callback.redirectUri, /\/oauth\/done$/);
    callback.expectState('s');
    const response = await fetch(`${callback.redirectUri}?error=${encodeURIComponent('<b>access_denied</b>')}&state=s`);
    assert.equal(response.status, 200);
    const html = await response.text();
    assert.match(html, /<h1 class="bad">Authorization failed<\/h1><p>The authorization server answered: &lt;b&gt;access_denied&lt;\/b&gt;<\/p>/);
    assert.doesNotMatch(html, /<b>/);
    const params = await callback.wait();
    assert.equal(params.get('error'), '<b>access_denied</b>');
    assert.equal(params.get('state'), 's');
    assert.equal(await isListening(callback.redirectUri), false);
  });

  it('answers 404 elsewhere, 400 without code or error, 405 to other methods, and keeps waiting', async () => {
    const callback = await startLoopback();
    callback.expectState('s');
    const origin = new URL(callback.redirectUri).origin;
    assert.equal((await fetch(`${origin}/favicon.ico`)).status, 404);
    assert.equal((await fetch(`${origin}/callback/extra?code=x`)).status, 404);
    const bad = await fetch(`${callback.redirectUri}?state=only`);
    assert.equal(bad.status, 400);
    assert.match(bad.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    const post = await fetch(`${callback.redirectUri}?code=x`, { method: 'POST' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET');
    assert.equal(await isListening(callback.redirectUri), true);
    assert.equal((await fetch(`${callback.redirectUri}?code=late&state=s`)).status, 200);
    assert.equal((await callback.wait()).get('code'), 'late');
  });

  it('ignores callbacks without the expected state: a forged error or code does not end the sign-in', async () => {
    const callback = await startLoopback();
    callback.expectState('the-right-state');
    let ended = false;
    void callback.wait().then(
      () => (ended = true),
      () => (ended = true),
    );
    for (const query of [
      'error=x',
      'error=access_denied&state=wrong',
      'code=forged&state=wrong',
      'code=forged',
      'code=forged&state=',
      'code=forged&state=the-right-state&state=wrong',
    ]) {
      const response = await fetch(`${callback.redirectUri}?${query}`);
      assert.equal(response.status, 400, query);
      assert.match(response.headers.get('content-security-policy') ?? '', /default-src 'none'/);
      assert.match(await response.text(), /<h1>Not this sign-in<\/h1><p>This callback was not for the sign-in in progress; it was ignored\.<\/p>/, query);
    }
    assert.equal(ended, false, 'the wait goes on');
    assert.equal(await isListening(callback.redirectUri), true);
    const right = await fetch(`${callback.redirectUri}?code=real&state=the-right-state`);
    assert.equal(right.status, 200);
    assert.match(await right.text(), /Signed in/);
    const params = await callback.wait();
    assert.equal(params.get('code'), 'real');
    assert.equal(await isListening(callback.redirectUri), false);
  });

  it('ignores every callback until the state is known, and follows a newer state', async () => {
    const callback = await startLoopback();
    assert.equal((await fetch(`${callback.redirectUri}?code=early&state=s1`)).status, 400);
    callback.expectState('s1');
    callback.expectState('s2');
    assert.equal((await fetch(`${callback.redirectUri}?code=old&state=s1`)).status, 400);
    assert.equal((await fetch(`${callback.redirectUri}?code=new&state=s2`)).status, 200);
    assert.equal((await callback.wait()).get('code'), 'new');
    assert.throws(() => callback.expectState(''), isClientError('authorization_failed'));
  });

  it('refuses requests naming another host (DNS rebinding)', async () => {
    const callback = await startLoopback();
    const { port } = new URL(callback.redirectUri);
    const status = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1', () => {
        socket.write(`GET /callback?code=x HTTP/1.1\r\nHost: evil.example:${port}\r\nConnection: close\r\n\r\n`);
      });
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
      socket.on('end', () => resolve(text.split('\r\n')[0] ?? ''));
      socket.on('error', reject);
    });
    assert.match(status, / 400 /);
    assert.equal(await isListening(callback.redirectUri), true);
    await callback.close();
  });

  it('times out, closing the server', async () => {
    const callback = await startLoopback({ timeoutMs: 50 });
    await assert.rejects(callback.wait(), isClientError('authorization_timeout'));
    assert.equal(await isListening(callback.redirectUri), false);
    await callback.close();
  });

  it('does not reject unhandled when nobody waits before the timeout', async () => {
    const callback = await startLoopback({ timeoutMs: 10 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await assert.rejects(callback.wait(), isClientError('authorization_timeout'));
  });

  it('rejects a pending wait when closed', async () => {
    const callback = await startLoopback();
    const waiting = callback.wait();
    await callback.close();
    await assert.rejects(waiting, isClientError('authorization_failed'));
    assert.equal(await isListening(callback.redirectUri), false);
    await callback.close();
  });

  it('says clearly when the chosen port is busy', async () => {
    const first = await startLoopback();
    const port = Number(new URL(first.redirectUri).port);
    await assert.rejects(startLoopback({ port }), (error: unknown) => {
      isClientError('authorization_failed')(error);
      assert.match((error as Error).message, new RegExp(`port ${port}.*in use`));
      return true;
    });
    await first.close();
  });

  it('listens on the given port', async () => {
    const probe = await startLoopback();
    const port = Number(new URL(probe.redirectUri).port);
    await probe.close();
    const callback = await startLoopback({ port });
    assert.equal(callback.redirectUri, `http://127.0.0.1:${port}/callback`);
    await callback.close();
  });
});
