/**
 * DPoP at the token endpoint of the built CLI: `serve --dpop-nonce` asks every proof for a nonce,
 * a client added with `clients add --dpop-bound` gets no token without a proof, and a proof used
 * before a restart of `serve` on its SQLite file is refused after it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { dpopProofSigner, generateDpopKeyPair } from '../../src/core/dpop.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

describe('serve --dpop-nonce and clients add --dpop-bound', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  let server: RunningServer;

  before(async () => {
    server = await startServe(['--port', String(await freePort()), '--data', data, '--quiet', '--dpop-nonce']);
  });
  after(async () => {
    await server?.stop();
  });

  it('a --dpop-bound client needs a proof, the proof a nonce, and then gets a DPoP-bound token', async () => {
    const added = await cli(['clients', 'add', '--data', data, '--name', 'bound robot', '--grant-type', 'client_credentials', '--dpop-bound']);
    assert.equal(added.code, 0, added.stderr);
    const client = JSON.parse(added.stdout) as { client_id: string; client_secret: string; dpop_bound_access_tokens?: boolean };
    assert.equal(client.dpop_bound_access_tokens, true);
    const tokenUrl = `${server.issuer}/token`;
    const authorization = `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`;
    const post = (dpop?: string) =>
      fetch(tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization, ...(dpop ? { dpop } : {}) },
        body: 'grant_type=client_credentials',
      });

    const bare = await post();
    assert.equal(bare.status, 400);
    assert.equal(((await bare.json()) as { error: string }).error, 'invalid_dpop_proof');

    const key = dpopProofSigner(generateDpopKeyPair());
    const challenge = await post(key.sign({ method: 'POST', url: tokenUrl }));
    assert.equal(challenge.status, 400);
    assert.equal(((await challenge.json()) as { error: string }).error, 'use_dpop_nonce');
    const nonce = challenge.headers.get('dpop-nonce');
    assert.ok(nonce);

    const answer = await post(key.sign({ method: 'POST', url: tokenUrl, nonce }));
    const body = (await answer.json()) as { token_type: string; access_token: string };
    assert.equal(answer.status, 200, JSON.stringify(body));
    assert.equal(body.token_type, 'DPoP');
    const claims = JSON.parse(Buffer.from(body.access_token.split('.')[1]!, 'base64url').toString()) as { cnf?: { jkt: string } };
    assert.deepEqual(claims.cnf, { jkt: key.jkt });
  });
});

describe('serve restarted on the same SQLite file', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  let server: RunningServer | undefined;
  after(async () => {
    await server?.stop();
  });

  it('refuses a proof used before the restart', async () => {
    const port = String(await freePort());
    server = await startServe(['--port', port, '--data', data, '--quiet']);
    const added = await cli(['clients', 'add', '--data', data, '--name', 'robot', '--grant-type', 'client_credentials']);
    assert.equal(added.code, 0, added.stderr);
    const client = JSON.parse(added.stdout) as { client_id: string; client_secret: string };
    const tokenUrl = `${server.issuer}/token`;
    const post = (dpop: string) =>
      fetch(tokenUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
          dpop,
        },
        body: 'grant_type=client_credentials',
      });
    const key = dpopProofSigner(generateDpopKeyPair());
    const proof = key.sign({ method: 'POST', url: tokenUrl });
    const used = await post(proof);
    assert.equal(used.status, 200, await used.clone().text());
    assert.equal(((await used.json()) as { token_type: string }).token_type, 'DPoP');

    assert.equal(await server.stop(), 0);
    server = await startServe(['--port', port, '--data', data, '--quiet']);
    const replayed = await post(proof);
    const body = (await replayed.json()) as { error: string; error_description: string };
    assert.equal(replayed.status, 400, JSON.stringify(body));
    assert.equal(body.error, 'invalid_dpop_proof');
    assert.match(body.error_description, /already used/);
    const fresh = await post(key.sign({ method: 'POST', url: tokenUrl }));
    assert.equal(fresh.status, 200, await fresh.text());
  });
});
