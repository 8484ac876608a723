/**
 * docs/enterprise.md's set-up of context-auth as the identity provider for a third party's
 * authorization server, run as written: the operator's commands and `id-jag.json` (the blocks
 * marked `<!-- id-jag third party: NAME -->`), a person signing in to the application, its token
 * exchange (the marked HTTP request), and the third party's checks of the ID-JAG with jose
 * (examples/id-jag-verifier.ts, the code the page shows): our discovery document, its jwks_uri,
 * `typ`, `iss`, `aud` and `client_id`. What differs from the page, and only this: the built CLI
 * for `npx context-auth`, a free port for 8080, a data folder and a config file path of the test's
 * own, and the password typed at `users add`.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { decodeProtectedHeader } from 'jose';
import { verifyIdJag, type IdJagTrust } from '../../examples/id-jag-verifier.js';
import { authorizeUrl, basic, Browser, jwtClaims, pkcePair, signInAndConsent } from '../helpers/harness.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const DOC = readFileSync(resolve(import.meta.dirname, '../../docs/enterprise.md'), 'utf8');
const ALICE = { username: 'alice', password: 'correct horse battery' };
const ID_JAG = 'urn:ietf:params:oauth:token-type:id-jag';

/** The text of the block marked `name` on the page. */
function block(name: string): string {
  const found = [...DOC.matchAll(/<!-- id-jag third party: ([\w-]+) -->\n```\w*\n([\s\S]*?)\n```/g)].find((m) => m[1] === name);
  assert.ok(found, `docs/enterprise.md has no block "id-jag third party: ${name}"`);
  return found[2]!;
}

/** Each line of a shell block as the arguments of `npx context-auth`, words in double quotes kept together. */
function commands(text: string): string[][] {
  return text.split('\n').map((line) => {
    const words = [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!);
    assert.deepEqual(words.slice(0, 2), ['npx', 'context-auth'], line);
    return words.slice(2);
  });
}

/** The marked HTTP request: its method and path, headers and form, each `<placeholder>` replaced by `values`' entry. */
function request(text: string, values: Record<string, string>): { method: string; path: string; headers: Record<string, string>; form: URLSearchParams } {
  const fill = (value: string) =>
    value.replace(/<[^>]+>/g, (placeholder) => {
      assert.ok(Object.hasOwn(values, placeholder), `no value for ${placeholder}`);
      return values[placeholder]!;
    });
  const [head, body] = text.split('\n\n') as [string, string];
  const [start, ...headerLines] = head.split('\n');
  const [method, path] = start!.split(' ') as [string, string];
  const headers = Object.fromEntries(
    headerLines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), fill(line.slice(line.indexOf(':') + 1).trim())]),
  );
  const form = new URLSearchParams();
  for (const line of body.split('\n')) {
    const pair = line.replace(/^&/, '');
    form.append(pair.slice(0, pair.indexOf('=')), fill(pair.slice(pair.indexOf('=') + 1)));
  }
  return { method, path, headers, form };
}

describe("docs/enterprise.md: context-auth as the identity provider of a third party's authorization server", { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  let server: RunningServer;
  let assistant: { client_id: string; client_secret: string; redirect_uris: string[] };
  let aliceId: string;
  let trust: IdJagTrust;
  /** The third party's id for the application, as id-jag.json maps ours to. */
  let clientIdThere: string;

  before(async () => {
    const [addUser, addClient] = commands(block('operator'));
    const added = await cli([...addUser!, '--data', data], `${ALICE.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    const client = await cli([...addClient!, '--data', data]);
    assert.equal(client.code, 0, client.stderr);
    assistant = JSON.parse(client.stdout) as typeof assistant;
    const users = await cli(['users', 'list', '--json', '--data', data]);
    aliceId = (JSON.parse(users.stdout) as { id: string; username: string }[]).find((user) => user.username === ALICE.username)!.id;

    const config = JSON.parse(block('config').replace('<our client_id>', assistant.client_id)) as { issuer: string; clients: Record<string, string> }[];
    clientIdThere = config[0]!.clients[assistant.client_id]!;
    const configFile = join(data, 'id-jag.json');
    writeFileSync(configFile, JSON.stringify(config));
    const [serve] = commands(block('serve'));
    assert.equal(serve![0], 'serve');
    const args = serve!.slice(1).map((arg) => (arg === 'id-jag.json' ? configFile : arg));
    server = await startServe([...args, '--port', String(await freePort()), '--data', data, '--quiet']);
    trust = { idpIssuer: server.issuer, ownIssuer: config[0]!.issuer };
  });
  after(() => server?.stop());

  /** Alice signs in to the assistant through our pages and consents to `scope`; its token response. */
  async function signIn(scope: string): Promise<Record<string, string>> {
    const browser = new Browser((path, init) => fetch(new URL(path, server.issuer), init));
    const { verifier, challenge } = pkcePair();
    const redirectUri = assistant.redirect_uris[0]!;
    const start = await browser.fetch(
      authorizeUrl({
        response_type: 'code',
        client_id: assistant.client_id,
        redirect_uri: redirectUri,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        scope,
      }),
    );
    const location = await signInAndConsent(browser, start, ALICE, 'approve', server.issuer);
    const response = await fetch(`${server.issuer}/token`, {
      method: 'POST',
      headers: { authorization: basic(assistant.client_id, assistant.client_secret) },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: location.searchParams.get('code')!,
        code_verifier: verifier,
        redirect_uri: redirectUri,
      }),
    });
    assert.equal(response.status, 200, await response.clone().text());
    return (await response.json()) as Record<string, string>;
  }

  /** The page's token exchange, as the assistant sends it with Alice's refresh token. */
  async function exchange(refreshToken: string): Promise<Response> {
    const { method, path, headers, form } = request(block('exchange'), {
      '<our client_id:client_secret>': basic(assistant.client_id, assistant.client_secret).slice('Basic '.length),
      "<alice's refresh token>": refreshToken,
    });
    return fetch(new URL(path, server.issuer), { method, headers, body: form });
  }

  it('says in its discovery document that it issues ID-JAGs', async () => {
    const metadata = (await (await fetch(`${server.issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    assert.ok((metadata.grant_types_supported as string[]).includes('urn:ietf:params:oauth:grant-type:token-exchange'));
    assert.deepEqual(metadata.identity_chaining_requested_token_types_supported, [ID_JAG]);
  });

  it('issues the ID-JAG the page describes, which the third party verifies with jose against our JWKS', async () => {
    const tokens = await signIn('mcp:tools');
    const response = await exchange(tokens.refresh_token!);
    const body = (await response.json()) as Record<string, unknown>;
    assert.equal(response.status, 200, JSON.stringify(body));
    assert.equal(body.issued_token_type, ID_JAG);
    assert.equal(body.token_type, 'N_A');
    const idJag = String(body.access_token);

    const claims = await verifyIdJag(idJag, clientIdThere, trust);
    assert.equal(claims.iss, server.issuer);
    assert.equal(claims.aud, 'https://auth.tools.example');
    assert.equal(claims.client_id, 'assistant-at-tools');
    assert.equal(claims.sub, aliceId);
    assert.equal(claims.resource, 'https://tools.example/mcp');
    assert.equal(claims.scope, 'mcp:tools');
    assert.equal(claims.exp! - claims.iat!, 300);
    assert.equal(typeof claims.jti, 'string');
    assert.equal(claims.email, undefined, 'alice is a local user: no email address is known');
    const header = decodeProtectedHeader(idJag);
    assert.equal(header.typ, 'oauth-id-jag+jwt');
    assert.equal(header.alg, 'ES256');
    assert.equal(typeof header.kid, 'string');
  });

  it("the third party's checks refuse what is not for it: another client, another audience, a token of ours that is no ID-JAG", async () => {
    const tokens = await signIn('mcp:tools');
    const idJag = String(((await (await exchange(tokens.refresh_token!)).json()) as { access_token: string }).access_token);
    await assert.rejects(verifyIdJag(idJag, assistant.client_id, trust), /another client/);
    await assert.rejects(verifyIdJag(idJag, clientIdThere, { ...trust, ownIssuer: 'https://auth.other.example' }), /"aud" claim/);
    await assert.rejects(verifyIdJag(idJag, clientIdThere, { ...trust, idpIssuer: `${server.issuer}/elsewhere` }), /discovery document/);
    // Alice's access token is signed with the same keys, but its typ says what it is.
    assert.equal(jwtClaims(tokens.access_token).iss, server.issuer);
    await assert.rejects(verifyIdJag(tokens.access_token!, clientIdThere, trust), /"typ"/);
  });
});
