/**
 * The device authorization grant (RFC 8628) in ContextClient against a real authorization server:
 * node-oidc-provider with its device flow on, for a context server whose protected resource
 * metadata names it. The client registers itself for the device grant (and the browser flow the
 * provider also has), shows the code, and polls; the test plays the person on another device,
 * through the provider's own /device pages.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ClientError } from '../../src/client/errors.js';
import type { DeviceCodeInfo } from '../../src/client/device.js';
import { ContextClient } from '../../src/client/session.js';
import { MemoryTokenStore } from '../../src/client/token-store.js';
import { bearerChallenge } from '../../src/core/www-authenticate.js';
import { personEntersCode } from '../helpers/oidc-device-pages.js';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.js';
import { serveHandler, type ServedApp } from './setup.js';

describe('device authorization grant against node-oidc-provider', () => {
  let provider: TestOidcProvider;
  let context: ServedApp;
  let serverUrl: string;

  before(async () => {
    context = await serveHandler((request) => {
      const url = new URL(request.url);
      const origin = context.origin;
      if (url.pathname === '/.well-known/oauth-protected-resource/mcp') {
        return Response.json({ resource: `${origin}/mcp`, authorization_servers: [provider.issuer], scopes_supported: ['api'] });
      }
      return new Response(null, {
        status: 401,
        headers: { 'www-authenticate': bearerChallenge({ resourceMetadata: `${origin}/.well-known/oauth-protected-resource/mcp` }) },
      });
    });
    serverUrl = `${context.origin}/mcp`;
    provider = await startOidcProvider({ redirectUris: ['http://127.0.0.1/unused'], apiAudience: serverUrl, deviceFlow: true });
  });

  after(async () => {
    await provider.stop();
    await context.close();
  });

  /** A client whose polls wait a moment of real time (the provider names no interval: 5 s otherwise); each wait asked is recorded. */
  function deviceClient(onDeviceCode: (code: DeviceCodeInfo) => void) {
    const waits: number[] = [];
    const client = new ContextClient({
      serverUrl,
      store: new MemoryTokenStore(),
      grantType: 'device_code',
      onDeviceCode,
      sleep: async (ms) => {
        waits.push(ms);
        await new Promise((resolve) => setTimeout(resolve, 20));
      },
    });
    return { client, waits };
  }

  it('gets a token once the person has entered the code and signed in, and refreshes it afterwards', async () => {
    let person: Promise<string> | undefined;
    let shown: DeviceCodeInfo | undefined;
    const { client, waits } = deviceClient((code) => {
      shown = code;
      person = personEntersCode(code.verificationUriComplete!, code.userCode, 'continue');
    });
    const grant = await client.login();
    assert.match(await person!, /Sign-in Success/);
    assert.match(shown!.userCode, /^[A-Z]{4}-[A-Z]{4}$/);
    assert.equal(shown!.verificationUri, `${provider.issuer}/device`);
    assert.equal(shown!.verificationUriComplete, `${provider.issuer}/device?user_code=${shown!.userCode}`);
    assert.ok(shown!.expiresIn > 0);
    assert.ok(waits.length >= 1 && waits.every((ms) => ms === 5000), `polls every 5 s (the RFC's default): ${waits.join(', ')}`);

    assert.equal(grant.issuer, provider.issuer);
    assert.equal(grant.resource, serverUrl);
    assert.equal(grant.scope, 'api');
    assert.ok(grant.refreshToken, 'a refresh token came with it');
    const registered = await client.store.getClient(client.application, provider.issuer);
    // The provider has the browser flow too: one registration serves both, with a loopback redirect URI for the browser.
    assert.deepEqual(
      registered?.grantTypes,
      ['authorization_code', 'urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
      'registered for the device grant and the browser flow',
    );
    assert.equal(registered?.redirectUris.length, 1);
    assert.match(registered!.redirectUris[0]!, /^http:\/\/127\.0\.0\.1:\d+\/callback$/);

    const refreshed = await client.refresh({ ...grant, expiresAt: 0 });
    assert.notEqual(refreshed.accessToken, grant.accessToken);
    assert.notEqual(refreshed.refreshToken, grant.refreshToken, 'the provider rotated the refresh token');
    assert.deepEqual(await client.grant(), refreshed);
  });

  it('binds the tokens to a DPoP key when asked, each poll answering the nonce the provider requires, and refreshes with that key', async () => {
    const dpopProvider = await startOidcProvider({ redirectUris: ['http://127.0.0.1/unused'], apiAudience: serverUrl, deviceFlow: true, dpop: true });
    const plain = provider;
    provider = dpopProvider;
    try {
      let person: Promise<string> | undefined;
      const client = new ContextClient({
        serverUrl,
        store: new MemoryTokenStore(),
        grantType: 'device_code',
        dpop: true,
        onDeviceCode: (code) => void (person = personEntersCode(code.verificationUriComplete!, code.userCode, 'continue')),
        sleep: () => new Promise((resolve) => setTimeout(resolve, 20)),
      });
      const grant = await client.login();
      await person;
      assert.equal(grant.issuer, dpopProvider.issuer);
      assert.equal(grant.tokenType, 'DPoP', 'the provider issued a DPoP-bound token');
      assert.ok(grant.dpopKey);
      const refreshed = await client.refresh({ ...grant, expiresAt: 0 });
      assert.equal(refreshed.tokenType, 'DPoP');
      assert.notEqual(refreshed.accessToken, grant.accessToken);
    } finally {
      provider = plain;
      await dpopProvider.stop();
    }
  });

  it('reports the person pressing Abort as a refused sign-in, and stores nothing', async () => {
    let person: Promise<string> | undefined;
    const { client } = deviceClient((code) => {
      person = personEntersCode(code.verificationUriComplete!, code.userCode, 'abort');
    });
    await assert.rejects(client.login(), (error: unknown) => {
      assert.ok(error instanceof ClientError);
      assert.equal(error.code, 'authorization_failed');
      assert.match(error.message, /the sign-in was refused \(access_denied/);
      return true;
    });
    await person;
    assert.equal(await client.grant(), undefined);
  });
});
