/**
 * Attacks on DPoP (RFC 9449) at the token endpoint and at the co-hosted /mcp:
 * - someone who saw an honest client's proof (it travels in a header) spends it first, and floods
 *   the token endpoint with proofs, under the client's id with a wrong secret: every request is
 *   invalid_client, no record of any proof is written, and the honest client's proof is taken;
 * - a proof captured at the token endpoint replayed, at the same server and at a second one on
 *   the same store (a restart, or another replica): refused, nothing issued;
 * - a token holder flooding /mcp with proofs dated as far ahead as tolerated, to raise the guard's
 *   replay line past the present: honest proofs go on being served;
 * - a proof whose RSA key makes each signature check cost milliseconds (a 3071-bit exponent, an
 *   8192-bit modulus): refused at both, naming why, before any signature is checked.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { it } from 'node:test';
import { accessTokenHash, dpopProofSigner, generateDpopKeyPair } from '../../src/core/dpop.js';
import { basic, expectOAuthError, ISSUER, postForm, registerServiceClient, RESOURCE, type Harness, type TestClient } from '../helpers/harness.js';
import { assertUnchanged, ISSUED, onEveryStore } from './setup.js';

const TOKEN_URL = `${ISSUER}/token`;
const newKey = () => dpopProofSigner(generateDpopKeyPair());

function clientCredentials(h: Harness, client: TestClient, secret: string, dpop: string): Promise<Response> {
  return postForm(h, '/token', { grant_type: 'client_credentials' }, { authorization: basic(client.client_id, secret), dpop });
}

async function dpopToken(h: Harness, client: TestClient, key: ReturnType<typeof newKey>): Promise<string> {
  const response = await clientCredentials(h, client, client.client_secret!, key.sign({ method: 'POST', url: TOKEN_URL, now: h.clock.now }));
  const body = (await response.json()) as { access_token: string; token_type: string };
  assert.equal(response.status, 200, JSON.stringify(body));
  assert.equal(body.token_type, 'DPoP');
  return body.access_token;
}

/** whoami at /mcp with a DPoP-bound token and `proof`. */
function whoamiWithProof(h: Harness, token: string, proof: string): Promise<Response> {
  return h.request('/mcp', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
      authorization: `DPoP ${token}`,
      dpop: proof,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } }),
  });
}

async function refusedAtMcp(response: Response, description: RegExp): Promise<void> {
  const text = await response.text();
  assert.equal(response.status, 401, text);
  const body = JSON.parse(text) as { error: string; error_description: string };
  assert.equal(body.error, 'invalid_dpop_proof', text);
  assert.match(body.error_description, description);
  assert.match(response.headers.get('www-authenticate') ?? '', /DPoP error="invalid_dpop_proof"/);
}

/** A proof by hand whose header carries `jwk`, with a junk signature of RSA length. */
function rsaProof(jwk: Record<string, string>, claims: Record<string, unknown>): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${encode({ typ: 'dpop+jwt', alg: 'PS256', jwk })}.${encode(claims)}.${randomBytes(384).toString('base64url')}`;
}

function randomUnsigned(bytes: number, top: number): string {
  const value = randomBytes(bytes);
  value[0] = top;
  value[bytes - 1]! |= 1;
  return value.toString('base64url');
}

/** A 3072-bit key with a 3071-bit exponent, and an 8192-bit key: each check would cost milliseconds. */
const COSTLY_KEYS: [Record<string, string>, RegExp][] = [
  [{ kty: 'RSA', n: randomUnsigned(384, 0x80), e: randomUnsigned(384, 0x40) }, /RSA key whose exponent is not 65537/],
  [{ kty: 'RSA', n: randomUnsigned(1024, 0x80), e: 'AQAB' }, /8192-bit RSA key: 2048 to 4096 bits are taken/],
];

onEveryStore('DPoP proofs: floods, replays and costly keys', (env) => {
  it("a proof spent first under a wrong secret, and a flood of them, record nothing: the honest client's proof is taken", async () => {
    const h = await env.target();
    const client = await registerServiceClient(h);
    const honest = newKey();
    const seen = honest.sign({ method: 'POST', url: TOKEN_URL, now: h.clock.now });
    const before = await env.counts();
    await expectOAuthError(await clientCredentials(h, client, 'guessed secret', seen), 401, 'invalid_client');
    const flooder = newKey();
    for (let i = 0; i < 100; i++) {
      await expectOAuthError(
        await clientCredentials(h, client, `guess ${i}`, flooder.sign({ method: 'POST', url: TOKEN_URL, now: h.clock.now + 60 })),
        401,
        'invalid_client',
      );
    }
    assertUnchanged(before, await env.counts(), [...ISSUED, 'used_assertions'], "proofs sent without the client's secret");
    const taken = await clientCredentials(h, client, client.client_secret!, seen);
    assert.equal(taken.status, 200, await taken.text());
  });

  it('a captured proof replayed at the token endpoint is refused, at this server and at another on the same store, and issues nothing', async () => {
    const h = await env.target();
    const client = await registerServiceClient(h);
    const captured = newKey().sign({ method: 'POST', url: TOKEN_URL, now: h.clock.now });
    assert.equal((await clientCredentials(h, client, client.client_secret!, captured)).status, 200);
    const before = await env.counts();
    const restarted = await env.target();
    for (const server of [h, restarted]) {
      const body = await expectOAuthError(await clientCredentials(server, client, client.client_secret!, captured), 400, 'invalid_dpop_proof');
      assert.match(body.error_description ?? '', /already used/);
    }
    assertUnchanged(before, await env.counts(), [...ISSUED, 'used_assertions'], 'replayed proof');
  });

  it('a token holder flooding /mcp with proofs dated ahead does not get honest proofs refused', async () => {
    const h = await env.target({}, { dpop: { replayCacheSize: 50 } });
    const client = await registerServiceClient(h);
    const [honest, flooder] = [newKey(), newKey()];
    const [honestToken, flooderToken] = [await dpopToken(h, client, honest), await dpopToken(h, client, flooder)];
    const served = (response: Response) => response.status === 200;
    let floodServed = 0;
    for (let i = 0; i < 200; i++) {
      const response = await whoamiWithProof(
        h,
        flooderToken,
        flooder.sign({ method: 'POST', url: RESOURCE, accessToken: flooderToken, now: h.clock.now + 60 }),
      );
      if (served(response)) floodServed++;
      else await refusedAtMcp(response, /ahead of this server's clock/);
    }
    assert.equal(floodServed, 5, 'proofs dated ahead fill a tenth of the record at most');
    for (let i = 0; i < 60; i++) {
      h.clock.now += 1;
      const response = await whoamiWithProof(h, honestToken, honest.sign({ method: 'POST', url: RESOURCE, accessToken: honestToken, now: h.clock.now }));
      assert.equal(response.status, 200, `honest request ${i}: ${await response.text()}`);
    }
  });

  it('proofs whose RSA key would make the signature check cost milliseconds are refused at /token and at /mcp', async () => {
    const h = await env.target();
    const client = await registerServiceClient(h);
    const before = await env.counts();
    for (const [jwk, why] of COSTLY_KEYS) {
      const proof = rsaProof(jwk, { jti: randomBytes(8).toString('hex'), htm: 'POST', htu: TOKEN_URL, iat: h.clock.now });
      const body = await expectOAuthError(await clientCredentials(h, client, client.client_secret!, proof), 400, 'invalid_dpop_proof');
      assert.match(body.error_description ?? '', why);
    }
    assertUnchanged(before, await env.counts(), [...ISSUED, 'used_assertions'], 'costly proof keys at the token endpoint');
    // A token holder's own token, with a proof by a costly key: the key is refused before its signature is checked.
    const token = await dpopToken(h, client, newKey());
    for (const [jwk, why] of COSTLY_KEYS) {
      const proof = rsaProof(jwk, { jti: randomBytes(8).toString('hex'), htm: 'POST', htu: RESOURCE, iat: h.clock.now, ath: accessTokenHash(token) });
      await refusedAtMcp(await whoamiWithProof(h, token, proof), why);
    }
  });
});
