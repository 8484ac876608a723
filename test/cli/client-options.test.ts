/**
 * The client verbs' flags for programs: --private-key for client_credentials, and --grant-type
 * jwt-bearer with a workload token file or an ID token exchanged at --idp; each missing or
 * conflicting flag a usage error (exit 2) before anything is sent.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportPKCS8, generateKeyPair } from 'jose';
import { clientOptions } from '../../src/cli/client-options.js';
import { CliError } from '../../src/cli/errors.js';
import { serveHandler, type ServedApp } from '../client/setup.js';

const SERVER = 'https://mcp.example.com/mcp';
const CONTEXT = { issuer: 'https://as.example.com', tokenEndpoint: 'https://as.example.com/token', resource: SERVER };

describe('client verb flags for programs', () => {
  let dir: string;
  let keyFile: string;
  let tokenFile: string;
  let idp: ServedApp;
  const exchanges: URLSearchParams[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'context-auth-cli-flags-'));
    keyFile = join(dir, 'key.pem');
    await writeFile(keyFile, await exportPKCS8((await generateKeyPair('ES256', { extractable: true })).privateKey), { mode: 0o600 });
    tokenFile = join(dir, 'token');
    await writeFile(tokenFile, 'workload-jwt\n', { mode: 0o600 });
    idp = await serveHandler(async (request) => {
      const url = new URL(request.url);
      if (url.pathname === '/.well-known/openid-configuration') return Response.json({ issuer: idp.origin, token_endpoint: `${idp.origin}/token` });
      if (url.pathname !== '/token') return new Response('not found', { status: 404 });
      exchanges.push(new URLSearchParams(await request.text()));
      return Response.json({ access_token: 'a.b.c', issued_token_type: 'urn:ietf:params:oauth:token-type:id-jag', token_type: 'N_A' });
    });
  });
  after(async () => {
    await idp.close();
    await rm(dir, { recursive: true, force: true });
  });

  const usage = (pattern: RegExp) => (error: Error) => error instanceof CliError && error.exitCode === 2 && pattern.test(error.message);

  it('--private-key: the PEM for client_credentials, with --key-id and --key-alg', async () => {
    const options = await clientOptions(SERVER, {
      'grant-type': 'client_credentials',
      'client-id': 'robot',
      'private-key': keyFile,
      'key-id': 'k1',
      'key-alg': 'ES256',
    });
    assert.equal(options.grantType, 'client_credentials');
    assert.match(String(options.privateKey), /^-----BEGIN PRIVATE KEY-----/);
    assert.equal(options.keyId, 'k1');
    assert.equal(options.privateKeyAlg, 'ES256');
    assert.equal(options.clientSecret, undefined);
  });

  it('--grant-type jwt-bearer --assertion-file: the workload token as the assertion', async () => {
    const options = await clientOptions(SERVER, { 'grant-type': 'jwt-bearer', 'client-id': 'workload', 'assertion-file': tokenFile });
    assert.equal(options.grantType, 'jwt-bearer');
    assert.equal(await options.assertion!(CONTEXT), 'workload-jwt');
  });

  it('--id-token-file with --idp: an ID-JAG from the identity provider, as --idp-client-id (default --client-id)', async () => {
    const idTokenFile = join(dir, 'id_token');
    await writeFile(idTokenFile, 'the-id-token', { mode: 0o600 });
    const flags = { 'grant-type': 'jwt-bearer', 'client-id': 'agent', 'id-token-file': idTokenFile, idp: idp.origin };
    assert.equal(await (await clientOptions(SERVER, flags)).assertion!(CONTEXT), 'a.b.c');
    assert.equal(await (await clientOptions(SERVER, { ...flags, 'idp-client-id': 'agent-at-idp' })).assertion!(CONTEXT), 'a.b.c');
    assert.deepEqual(
      exchanges.map((form) => [form.get('client_id'), form.get('subject_token'), form.get('audience'), form.get('resource')]),
      [
        ['agent', 'the-id-token', CONTEXT.issuer, SERVER],
        ['agent-at-idp', 'the-id-token', CONTEXT.issuer, SERVER],
      ],
    );
  });

  const mistakes: [string, Record<string, string>, RegExp][] = [
    ['an unknown grant type', { 'grant-type': 'password' }, /--grant-type is one of authorization_code, client_credentials, jwt-bearer, not password/],
    ['--private-key for the browser flow', { 'client-id': 'c', 'private-key': 'k.pem' }, /--private-key is for --grant-type client_credentials or jwt-bearer/],
    [
      '--key-id without --private-key',
      { 'grant-type': 'client_credentials', 'client-id': 'c', 'client-secret': 's', 'key-id': 'k' },
      /--key-id is for --private-key/,
    ],
    [
      '--private-key and --client-secret',
      { 'grant-type': 'client_credentials', 'client-id': 'c', 'client-secret': 's', 'private-key': 'k.pem' },
      /either --client-secret .* or --private-key/,
    ],
    ['client_credentials without a credential', { 'grant-type': 'client_credentials', 'client-id': 'c' }, /needs --client-secret .* or --private-key/],
    ['a program without --client-id', { 'grant-type': 'jwt-bearer', 'assertion-file': 't' }, /--grant-type jwt-bearer needs --client-id/],
    [
      'jwt-bearer without an assertion',
      { 'grant-type': 'jwt-bearer', 'client-id': 'c' },
      /needs --assertion-file FILE, or --id-token-file FILE with --idp ISSUER/,
    ],
    [
      '--assertion-file and --id-token-file',
      { 'grant-type': 'jwt-bearer', 'client-id': 'c', 'assertion-file': 't', 'id-token-file': 'i', idp: 'https://idp.example.com' },
      /either --assertion-file or --id-token-file/,
    ],
    ['--id-token-file without --idp', { 'grant-type': 'jwt-bearer', 'client-id': 'c', 'id-token-file': 'i' }, /--id-token-file needs --idp ISSUER/],
    [
      '--idp that is no URL',
      { 'grant-type': 'jwt-bearer', 'client-id': 'c', 'id-token-file': 'i', idp: 'login.example.com' },
      /--idp is the identity provider's issuer URL/,
    ],
    [
      '--idp-client-id without --idp',
      { 'grant-type': 'jwt-bearer', 'client-id': 'c', 'assertion-file': 't', 'idp-client-id': 'x' },
      /--idp-client-id is for --idp/,
    ],
    [
      '--assertion-file without jwt-bearer',
      { 'grant-type': 'client_credentials', 'client-id': 'c', 'client-secret': 's', 'assertion-file': 't' },
      /--assertion-file is for --grant-type jwt-bearer/,
    ],
  ];
  for (const [what, flags, message] of mistakes) {
    it(`a usage error: ${what}`, async () => {
      await assert.rejects(clientOptions(SERVER, flags), usage(message));
    });
  }

  it('--dpop asks for DPoP-bound tokens; without it the client decides (dpop left unset)', async () => {
    assert.equal((await clientOptions(SERVER, { dpop: true })).dpop, true);
    assert.equal('dpop' in (await clientOptions(SERVER, {})), false);
  });

  it('a private key file others may write is refused, not read', async () => {
    const loose = join(dir, 'loose.pem');
    await writeFile(loose, 'key');
    await chmod(loose, 0o666);
    await assert.rejects(
      clientOptions(SERVER, { 'grant-type': 'client_credentials', 'client-id': 'c', 'private-key': loose }),
      /the private key file .* may be written by group or others/,
    );
  });
});
