/**
 * `serve` throttles sign-in by the connection's address too: failures spread over many accounts
 * from one address slow that address down (the address comes from the socket, never a header).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freePort, openSignInForm, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

describe('serve: sign-in throttled by address', { timeout: 300_000 }, () => {
  let server: RunningServer;
  before(async () => {
    server = await startServe(['--port', String(await freePort()), '--data', tempDataFolder(), '--quiet']);
  });
  after(() => server?.stop());

  it('six failures for six different accounts, then the seventh attempt from the same address waits', async () => {
    const { browser, action, csrf } = await openSignInForm(server);
    for (let i = 0; i < 6; i++) {
      const response = await browser.submit(action, { csrf, step: 'login', username: `nobody-${i}`, password: 'wrong password' });
      assert.equal(response.status, 401);
    }
    const seventh = await browser.submit(action, { csrf, step: 'login', username: 'yet-another', password: 'wrong password' });
    assert.equal(seventh.status, 429);
    assert.ok(Number(seventh.headers.get('retry-after')) >= 1);
  });
});
