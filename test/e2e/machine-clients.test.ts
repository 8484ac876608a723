/**
 * Machine clients (the client_credentials grant, SEP-1046) against the real `context-auth serve`,
 * with the official SDK v2 client's own providers: `ClientCredentialsProvider` with a secret, and
 * `PrivateKeyJwtProvider` with a private key whose public half was registered through the CLI
 * (`clients add --jwks FILE`). Each connects, calls the demo `whoami`, and sees its client id.
 * The SDK's own assertion helper, told to use the token endpoint URL as the audience (as RFC 7523
 * first allowed), is refused by default and accepted with `--client-assertion-audience
 * issuer-or-token-endpoint`. `context-auth client-key` makes a pair that `clients add --jwks` and
 * `call --private-key` take.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { calculateJwkThumbprint, type JWK } from 'jose';
import {
  Client,
  ClientCredentialsProvider,
  createPrivateKeyJwtAuth,
  PrivateKeyJwtProvider,
  StreamableHTTPClientTransport,
  type OAuthClientProvider,
} from '@modelcontextprotocol/client';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

describe('the SDK v2 machine-client providers against serve', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  let server: RunningServer;
  let issuer: string;

  before(async () => {
    server = await startServe(['--port', String(await freePort()), '--data', data, '--quiet']);
    issuer = server.issuer;
  });
  after(async () => {
    await server?.stop();
  });

  async function addClient(args: string[]): Promise<Record<string, unknown>> {
    const added = await cli(['clients', 'add', '--data', data, '--grant-type', 'client_credentials', ...args]);
    assert.equal(added.code, 0, added.stderr);
    return JSON.parse(added.stdout) as Record<string, unknown>;
  }

  async function whoami(authProvider: OAuthClientProvider): Promise<Record<string, unknown>> {
    const client = new Client({ name: 'machine-e2e', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${issuer}/mcp`), { authProvider });
    try {
      await client.connect(transport);
      const result = (await client.callTool({ name: 'whoami', arguments: {} })) as { structuredContent?: Record<string, unknown> };
      return result.structuredContent ?? {};
    } finally {
      await client.close().catch(() => {});
    }
  }

  it('ClientCredentialsProvider: a client with a secret', async () => {
    const added = await addClient(['--name', 'secret robot']);
    assert.equal(typeof added.client_secret, 'string');
    const provider = new ClientCredentialsProvider({ clientId: String(added.client_id), clientSecret: String(added.client_secret), expectedIssuer: issuer });
    const identity = await whoami(provider);
    assert.equal(identity.client_id, added.client_id);
    assert.deepEqual(identity.scopes, ['mcp:tools']);
  });

  it('PrivateKeyJwtProvider: a client registered with --jwks, no secret, proving itself with its key', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwksFile = join(data, 'robot-keys.json');
    writeFileSync(jwksFile, JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), use: 'sig', alg: 'ES256' }] }));
    const added = await addClient(['--name', 'key robot', '--jwks', jwksFile]);
    assert.equal(added.token_endpoint_auth_method, 'private_key_jwt');
    assert.equal(added.client_secret, undefined, 'no secret is created or printed');

    const provider = new PrivateKeyJwtProvider({
      clientId: String(added.client_id),
      privateKey: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
      algorithm: 'ES256',
      expectedIssuer: issuer,
    });
    const identity = await whoami(provider);
    assert.equal(identity.client_id, added.client_id);

    const uri = await addClient(['--name', 'published robot', '--jwks-uri', 'https://robot.example/jwks.json']);
    assert.equal(uri.jwks_uri, 'https://robot.example/jwks.json');
    assert.equal(uri.client_secret, undefined);

    const listed = await cli(['clients', 'list', '--data', data]);
    assert.match(listed.stdout, new RegExp(`${String(added.client_id)}\\s+key robot\\s+confidential \\(key\\)`));
  });

  it('client-key makes a pair that clients add --jwks and call --private-key take, ES256 or RS256, and never writes over a file', async () => {
    for (const alg of ['ES256', 'RS256']) {
      const pem = join(data, `${alg}.pem`);
      const jwksFile = join(data, `${alg}-keys.json`);
      const made = await cli(['client-key', '--private-key', pem, '--jwks', jwksFile, ...(alg === 'RS256' ? ['--alg', 'RS256'] : []), '--json']);
      assert.equal(made.code, 0, made.stderr);
      const { kid } = JSON.parse(made.stdout) as { kid: string };
      assert.equal(statSync(pem).mode & 0o777, 0o600, "the private key is its owner's alone");
      const [publicJwk, ...more] = (JSON.parse(readFileSync(jwksFile, 'utf8')) as { keys: Record<string, unknown>[] }).keys;
      assert.equal(more.length, 0);
      assert.deepEqual({ kid: publicJwk!.kid, alg: publicJwk!.alg, use: publicJwk!.use }, { kid, alg, use: 'sig' });
      assert.equal(kid, await calculateJwkThumbprint(publicJwk as JWK), 'the kid is the thumbprint');
      for (const member of ['d', 'p', 'q', 'dp', 'dq', 'qi']) assert.equal(publicJwk![member], undefined, `no private member ${member}`);

      const added = await addClient(['--name', `${alg} robot`, '--jwks', jwksFile]);
      const called = await cli([
        'call',
        `${issuer}/mcp`,
        'tools/call',
        '{"name":"whoami"}',
        '--grant-type',
        'client_credentials',
        '--client-id',
        String(added.client_id),
        '--private-key',
        pem,
        '--credentials',
        join(data, `${alg}-credentials.json`),
        '--json',
      ]);
      assert.equal(called.code, 0, called.stderr);
      assert.equal((JSON.parse(called.stdout) as { structuredContent: { client_id: string } }).structuredContent.client_id, added.client_id);
    }

    const pem = join(data, 'ES256.pem');
    const before = readFileSync(pem, 'utf8');
    const again = await cli(['client-key', '--private-key', pem, '--jwks', join(data, 'fresh-keys.json')]);
    assert.equal(again.code, 1);
    assert.equal(again.stderr, `context-auth: --private-key ${pem} exists already: client-key writes new files only, so that no key is replaced by mistake.\n`);
    assert.equal(readFileSync(pem, 'utf8'), before, 'the key is untouched');
    // A key set in the way: no private key is left behind without its public half.
    const lonely = join(data, 'lonely.pem');
    const taken = await cli(['client-key', '--private-key', lonely, '--jwks', join(data, 'ES256-keys.json')]);
    assert.equal(taken.code, 1);
    assert.match(taken.stderr, /--jwks .*ES256-keys\.json exists already/);
    assert.equal(existsSync(lonely), false);
  });

  it('clients add refuses what a registration would leave out: an operator names each value on purpose', async () => {
    const result = await cli([
      'clients',
      'add',
      '--data',
      data,
      '--name',
      'half app',
      '--redirect-uri',
      'http://127.0.0.1:9/cb',
      '--redirect-uri',
      'cursor://anysphere.cursor-mcp/oauth/callback',
    ]);
    assert.equal(result.code, 1, result.stderr);
    assert.match(
      result.stderr,
      /Cannot add the client: redirect_uris cursor:\/\/anysphere\.cursor-mcp\/oauth\/callback: redirect URI scheme cursor: is not allowed/,
    );
    const listed = await cli(['clients', 'list', '--data', data]);
    assert.doesNotMatch(listed.stdout, /half app/, 'nothing was added');
  });

  it('clients add refuses a private key, a secret beside keys, and an http jwks_uri', async () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const leaked = join(data, 'leaked.json');
    writeFileSync(leaked, JSON.stringify({ keys: [privateKey.export({ format: 'jwk' })] }));
    const base = ['clients', 'add', '--data', data, '--name', 'bad robot', '--grant-type', 'client_credentials'];
    const refusals: [string[], RegExp][] = [
      [['--jwks', leaked], /private member d/],
      [['--jwks', leaked, '--secret'], /not a secret: drop --secret/],
      [['--jwks-uri', 'http://robot.example/jwks.json'], /jwks_uri must be an https URL/],
    ];
    // The private key instead of the public key set: named as such, and none of it printed.
    const pem = join(data, 'robot.pem');
    writeFileSync(pem, privateKey.export({ format: 'pem', type: 'pkcs8' }));
    const wrongFile = await cli([...base, '--jwks', pem]);
    assert.equal(wrongFile.code, 1);
    assert.equal(
      wrongFile.stderr,
      `context-auth: --jwks ${pem} is a PEM key, not JSON: --jwks takes the public keys as a JSON Web Key Set, {"keys": [...]}.\n`,
    );
    for (const [args, message] of refusals) {
      const result = await cli([...base, ...args]);
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, message);
      assert.doesNotMatch(result.stdout, /client_secret/);
    }
  });

  it('an assertion whose aud is the token endpoint URL: refused by default, accepted with --client-assertion-audience issuer-or-token-endpoint', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    const jwksFile = join(data, 'legacy-robot-keys.json');
    writeFileSync(jwksFile, JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), use: 'sig', alg: 'ES256' }] }));
    /** A client_credentials request from a client whose assertion names `base`'s token endpoint. */
    const tokenRequest = async (base: string, clientId: string): Promise<Response> => {
      const params = new URLSearchParams({ grant_type: 'client_credentials' });
      const tokenEndpoint = new URL(`${base}/token`);
      await createPrivateKeyJwtAuth({ issuer: clientId, subject: clientId, privateKey: pem, alg: 'ES256', audience: tokenEndpoint })(
        new Headers(),
        params,
        tokenEndpoint,
      );
      return fetch(tokenEndpoint, { method: 'POST', body: params });
    };

    const added = await addClient(['--name', 'legacy robot', '--jwks', jwksFile]);
    const refused = await tokenRequest(issuer, String(added.client_id));
    assert.equal(refused.status, 401);
    const body = (await refused.json()) as { error: string; error_description: string };
    assert.equal(body.error, 'invalid_client');
    assert.match(body.error_description, new RegExp(`it must be the issuer identifier ${issuer}, as a single string`));

    const legacyData = tempDataFolder();
    const legacy = await startServe([
      '--port',
      String(await freePort()),
      '--data',
      legacyData,
      '--quiet',
      '--client-assertion-audience',
      'issuer-or-token-endpoint',
    ]);
    try {
      const inLegacy = await cli(['clients', 'add', '--data', legacyData, '--grant-type', 'client_credentials', '--name', 'legacy robot', '--jwks', jwksFile]);
      assert.equal(inLegacy.code, 0, inLegacy.stderr);
      const accepted = await tokenRequest(legacy.issuer, String((JSON.parse(inLegacy.stdout) as { client_id: string }).client_id));
      assert.equal(accepted.status, 200, await accepted.clone().text());
    } finally {
      await legacy.stop();
    }
    const wrong = await cli(['serve', '--port', String(await freePort()), '--data', tempDataFolder(), '--client-assertion-audience', 'token-endpoint']);
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stderr, /--client-assertion-audience must be issuer or issuer-or-token-endpoint/);
  });
});
