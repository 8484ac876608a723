import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hashSecret } from '../../src/core/secrets.js';
import { validateClientMetadata } from '../../src/authorization-server/checks/client-metadata.js';
import { registerClient as createClient } from '../../src/authorization-server/clients.js';
import {
  addUser,
  authorize,
  basic,
  createHarness,
  expectOAuthError,
  obtainTokens,
  postForm,
  REDIRECT_URI,
  registerClient,
  REVISIONS,
  type Harness,
} from '../helpers/harness.js';
import { CURSOR_REGISTRATION } from '../helpers/recorded-hosts.js';

const VALID = { client_name: 'Test Client', redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none' };
const INITIAL_ACCESS_TOKEN = 'initial-access-token-0123456789';

function register(h: Harness, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return h.request('/register', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

describe('dynamic client registration (RFC 7591)', () => {
  it('registers a public client: 201, a client id, no secret, the validated metadata echoed', async () => {
    const h = createHarness();
    const response = await register(h, { ...VALID, grant_types: ['authorization_code', 'refresh_token'], scope: 'mcp:tools' });
    assert.equal(response.status, 201);
    const body = (await response.json()) as Record<string, unknown>;
    assert.equal(typeof body.client_id, 'string');
    assert.equal(body.client_secret, undefined);
    assert.equal(body.client_id_issued_at, h.clock.now);
    assert.deepEqual(body.redirect_uris, [REDIRECT_URI]);
    assert.equal(body.token_endpoint_auth_method, 'none');
    assert.deepEqual(body.grant_types, ['authorization_code', 'refresh_token']);
    assert.deepEqual(body.response_types, ['code']);
    assert.equal(body.scope, 'mcp:tools');
    const stored = await h.store.getClient(body.client_id as string);
    assert.equal(stored?.clientSecretHash, null);
    assert.equal(stored?.registeredBy, 'dynamic');
    assert.equal(stored?.canIntrospect, false);
  });

  for (const method of ['client_secret_basic', 'client_secret_post'] as const) {
    it(`registers a confidential ${method} client; the secret is returned once and stored only as a hash`, async () => {
      const h = createHarness();
      const client = await registerClient(h, { token_endpoint_auth_method: method });
      const secret = client.client_secret!;
      assert.ok(secret.length >= 32);
      assert.equal(client.client_secret_expires_at, 0);
      assert.equal(client.token_endpoint_auth_method, method);
      const stored = await h.store.getClient(client.client_id);
      assert.equal(stored?.clientSecretHash, hashSecret(secret));
      assert.ok(!JSON.stringify(stored).includes(secret), 'the store record holds no clear secret');
    });
  }

  it('makes ids and secrets that a command line takes as values: hex, never starting with "-"', async () => {
    const h = createHarness();
    const metadata = validateClientMetadata(
      { client_name: 'Job', token_endpoint_auth_method: 'client_secret_basic', grant_types: ['client_credentials'] },
      h.server.metadata.scopes_supported,
    );
    // Base64url would start one secret in 64 with "-": in 500, about eight.
    for (let i = 0; i < 500; i++) {
      const { client, clientSecret } = await createClient(h.store, metadata, h.clock.now, { registeredBy: 'admin' });
      assert.match(client.clientId, /^[0-9a-f]{32}$/);
      assert.match(clientSecret!, /^[0-9a-f]{64}$/, '256 bits, hex');
    }
  });

  it('defaults token_endpoint_auth_method to client_secret_basic (RFC 7591 §2)', async () => {
    const client = await registerClient(createHarness(), { token_endpoint_auth_method: undefined });
    assert.equal(client.token_endpoint_auth_method, 'client_secret_basic');
    assert.equal(typeof client.client_secret, 'string');
  });

  it('accepts https redirect URIs and http ones on loopback hosts', async () => {
    const h = createHarness();
    const uris = [
      'https://app.example.com/callback',
      'http://localhost:8080/cb',
      'http://127.0.0.1/cb',
      'http://[::1]:3000/cb',
      'https://app.example.com/cb?x=1',
    ];
    const client = await registerClient(h, { redirect_uris: uris });
    assert.deepEqual(client.redirect_uris, uris);
  });

  for (const [label, redirect_uris] of [
    ['http on a public host', ['http://app.example.com/callback']],
    ['a fragment', ['https://app.example.com/callback#frag']],
    ['javascript:', ['javascript:alert(1)']],
    ['data:', ['data:text/html,<script>alert(1)</script>']],
    ['file:', ['file:///etc/passwd']],
    ['vbscript:', ['vbscript:msgbox(1)']],
    ['a relative URI', ['/callback']],
    ['no URI at all', ['not a uri']],
    ['an empty string', ['']],
    ['credentials', ['https://user:pass@app.example.com/callback']],
    ['spaces around it', [` ${REDIRECT_URI}`]],
    ['a private-use scheme the server does not admit', ['cursor://anysphere.cursor-mcp/oauth/callback']],
    ['none for the authorization_code grant', []],
    ['too many', Array.from({ length: 21 }, (_, i) => `https://app.example.com/cb${i}`)],
  ] as const) {
    it(`refuses redirect URIs with ${label}: 400 invalid_redirect_uri`, async () => {
      const h = createHarness();
      await expectOAuthError(await register(h, { ...VALID, redirect_uris }), 400, 'invalid_redirect_uri');
      assert.equal((await h.store.listClients()).length, 0);
    });
  }

  for (const [label, fields] of [
    ['an unknown auth method', { token_endpoint_auth_method: 'tls_client_auth' }],
    ['a non-string auth method', { token_endpoint_auth_method: 42 }],
    ['a null auth method', { token_endpoint_auth_method: null }],
    ['an unsupported grant type', { grant_types: ['implicit'] }],
    ['the password grant', { grant_types: ['password'] }],
    ['grant_types as a string', { grant_types: 'authorization_code' }],
    ['grant_types as null', { grant_types: null }],
    ['response type token', { response_types: ['token'] }],
    ['authorization_code without response type code', { response_types: [] }],
    ['refresh_token without authorization_code', { grant_types: ['refresh_token'], token_endpoint_auth_method: 'client_secret_basic' }],
    ['client_credentials for a public client', { grant_types: ['client_credentials'], redirect_uris: undefined }],
    ['only unsupported grant types', { grant_types: ['implicit', 'password'] }],
    ['no grant type at all', { grant_types: [] }],
    ['a scope with a bad character', { scope: 'mcp:tools "quoted"' }],
    ['scope as an array', { scope: ['mcp:tools'] }],
    ['token_endpoint_auth_methods_supported as a string', { token_endpoint_auth_method: undefined, token_endpoint_auth_methods_supported: 'none' }],
    [
      'only methods the server does not support',
      { token_endpoint_auth_method: undefined, token_endpoint_auth_methods_supported: ['tls_client_auth', 'self_signed_tls_client_auth'] },
    ],
    ['dpop_bound_access_tokens as a string', { dpop_bound_access_tokens: 'true' }],
    ['a numeric client_name', { client_name: 5 }],
    ['an object as logo_uri', { logo_uri: { href: 'https://app.example.com/logo.png' } }],
    ['contacts as a string', { contacts: 'admin@example.com' }],
    ['application_type as a number', { application_type: 1 }],
    ['redirect_uris as a string', { redirect_uris: REDIRECT_URI }],
    ['a non-string redirect URI', { redirect_uris: [42] }],
  ] as const) {
    it(`refuses metadata with ${label}: 400 invalid_client_metadata`, async () => {
      const h = createHarness();
      await expectOAuthError(await register(h, { ...VALID, ...fields }), 400, 'invalid_client_metadata');
      assert.equal((await h.store.listClients()).length, 0);
    });
  }

  for (const [label, body] of [
    ['invalid JSON', '{"redirect_uris": ['],
    ['a JSON array', '[]'],
    ['JSON null', 'null'],
    ['a JSON string', '"client"'],
  ] as const) {
    it(`refuses a body that is ${label}: 400 invalid_client_metadata`, async () => {
      await expectOAuthError(await register(createHarness(), body), 400, 'invalid_client_metadata');
    });
  }

  it('refuses a body that is not JSON: 400 invalid_request', async () => {
    const h = createHarness();
    const response = await h.request('/register', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'client_name=x' });
    await expectOAuthError(response, 400, 'invalid_request');
  });

  it('ignores fields it does not know, and keeps them out of the record', async () => {
    const h = createHarness();
    const client = await registerClient(h, { unknown_field: 'x', software_statement: 'eyJ...' });
    assert.equal(client.unknown_field, undefined);
    assert.equal((await h.store.getClient(client.client_id))?.metadata.unknown_field, undefined);
  });

  it('refuses every registration when registration is closed', async () => {
    const h = createHarness({ registration: 'closed' });
    const body = await expectOAuthError(await register(h, VALID), 403);
    assert.equal(body.error, 'access_denied');
    assert.equal((await h.store.listClients()).length, 0);
  });

  describe('with an initial access token', () => {
    for (const [label, authorization] of [
      ['missing', undefined],
      ['wrong', `Bearer ${INITIAL_ACCESS_TOKEN}x`],
      ['empty', 'Bearer '],
      ['sent as Basic', `Basic ${Buffer.from(`x:${INITIAL_ACCESS_TOKEN}`).toString('base64')}`],
    ] as const) {
      it(`refuses a ${label} token with 401`, async () => {
        const h = createHarness({ registration: { initialAccessToken: INITIAL_ACCESS_TOKEN } });
        const response = await register(h, VALID, authorization === undefined ? {} : { authorization });
        assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer/);
        await expectOAuthError(response, 401);
        assert.equal((await h.store.listClients()).length, 0);
      });
    }

    it('registers with the right bearer token', async () => {
      const h = createHarness({ registration: { initialAccessToken: INITIAL_ACCESS_TOKEN } });
      const response = await register(h, VALID, { authorization: `Bearer ${INITIAL_ACCESS_TOKEN}` });
      assert.equal(response.status, 201);
    });
  });
});

describe('registration of machine (client_credentials) clients', () => {
  const MACHINE = { client_name: 'Batch job', grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_basic', scope: 'mcp:tools' };

  it('refuses them under open registration: nobody would consent to their tokens', async () => {
    const h = createHarness();
    await expectOAuthError(await register(h, MACHINE), 400, 'invalid_client_metadata');
    assert.equal((await h.store.listClients()).length, 0);
  });

  it('accepts them behind an initial access token, and holds them to their registered scope', async () => {
    const h = createHarness({ registration: { initialAccessToken: INITIAL_ACCESS_TOKEN } });
    const response = await register(h, MACHINE, { authorization: `Bearer ${INITIAL_ACCESS_TOKEN}` });
    assert.equal(response.status, 201);
    const client = (await response.json()) as { client_id: string; client_secret: string };
    const token = (scope: string) =>
      postForm(h, '/token', { grant_type: 'client_credentials', scope }, { authorization: basic(client.client_id, client.client_secret) });
    assert.equal((await token('mcp:tools')).status, 200);
    await expectOAuthError(await token('mcp:admin'), 400, 'invalid_scope');
  });
});

describe('a dynamic client’s registered scope in the user flow', () => {
  it('is no limit: the user consents to a step-up the client did not foresee', async () => {
    const h = createHarness();
    const client = await registerClient(h, { scope: 'mcp:tools' });
    const { tokens } = await obtainTokens(h, REVISIONS[1], { client, scope: 'mcp:tools mcp:admin' });
    assert.equal(tokens.scope, 'mcp:admin mcp:tools');
  });

  it('is a limit for a client an operator registered with --scope', async () => {
    const h = createHarness();
    const metadata = validateClientMetadata(
      { client_name: 'Ops', redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none', grant_types: ['authorization_code'], scope: 'mcp:tools' },
      h.server.metadata.scopes_supported,
    );
    const { client } = await createClient(h.store, metadata, h.clock.now, { registeredBy: 'admin' });
    const user = await addUser(h);
    const { location } = await authorize(h, { client: { client_id: client.clientId }, user, scope: 'mcp:admin' });
    assert.equal(location.searchParams.get('error'), 'invalid_scope');
  });
});

describe('registration keeps no control characters in names and contacts', () => {
  it('refuses a body holding a NUL (no store can keep one)', async () => {
    const h = createHarness();
    await expectOAuthError(await register(h, { ...VALID, client_name: 'Evil\u0000Client' }), 400, 'invalid_client_metadata');
  });

  for (const [field, value] of [
    ['client_name', 'Evil\u0007Client'],
    ['software_id', 'id\nwith newline'],
    ['contacts', ['ops@example.com\u0007']],
  ] as const) {
    it(`leaves out ${field} with one, keeping the client`, async () => {
      const h = createHarness();
      const response = await register(h, { ...VALID, [field]: value });
      assert.equal(response.status, 201, await response.clone().text());
      const body = (await response.json()) as Record<string, unknown>;
      assert.equal(body[field], undefined);
      assert.equal((await h.store.getClient(body.client_id as string))?.metadata[field], undefined);
    });
  }
});

describe('client ids', () => {
  it('never start with "-", so they can follow an option on a command line', async () => {
    const h = createHarness();
    const ids = await Promise.all(Array.from({ length: 40 }, async () => (await registerClient(h)).client_id));
    for (const id of ids) assert.match(id, /^[0-9a-f]{32}$/);
    assert.equal(new Set(ids).size, ids.length);
  });
});

describe('application_type (SEP-837)', () => {
  const register = async (body: Record<string, unknown>): Promise<Response> => {
    const h = createHarness();
    return h.request('/register', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token_endpoint_auth_method: 'none', ...body }),
    });
  };

  it('native with a loopback redirect URI is kept and echoed', async () => {
    const response = await register({ application_type: 'native', redirect_uris: ['http://127.0.0.1:7777/callback'] });
    assert.equal(response.status, 201, await response.clone().text());
    assert.equal(((await response.json()) as { application_type?: string }).application_type, 'native');
  });

  it('web refuses a loopback redirect URI; https is fine', async () => {
    const refused = await register({ application_type: 'web', redirect_uris: ['http://localhost:7777/callback'] });
    assert.equal(refused.status, 400);
    assert.equal(((await refused.json()) as { error: string }).error, 'invalid_redirect_uri');
    assert.equal((await register({ application_type: 'web', redirect_uris: ['https://app.example/callback'] })).status, 201);
  });

  it('an unknown application_type is left out, as if none had been sent; none at all is accepted as before', async () => {
    const unknown = await register({ application_type: 'desktop', redirect_uris: ['http://127.0.0.1/cb'] });
    assert.equal(unknown.status, 201);
    assert.equal(((await unknown.json()) as { application_type?: string }).application_type, undefined);
    assert.equal((await register({ redirect_uris: ['http://127.0.0.1/cb'] })).status, 201);
  });

  it('web keeps its https redirect URI and leaves out its loopback one', async () => {
    const response = await register({ application_type: 'web', redirect_uris: ['http://localhost:7777/callback', 'https://app.example/callback'] });
    assert.equal(response.status, 201);
    assert.deepEqual(((await response.json()) as { redirect_uris: string[] }).redirect_uris, ['https://app.example/callback']);
  });
});

describe('registration keeps what it can (RFC 7591 §2: the server may replace requested values)', () => {
  /** Registers; returns the response body, the client kept, and what the log says was left out. */
  async function registered(h: Harness, body: Record<string, unknown>, headers: Record<string, string> = {}) {
    const response = await register(h, body, headers);
    const text = await response.text();
    assert.equal(response.status, 201, text);
    const answer = JSON.parse(text) as Record<string, unknown> & { client_id: string };
    const kept = await h.store.getClient(answer.client_id);
    const trimmed = h.log.filter((event) => event.event === 'client_metadata_trimmed' && event.client_id === answer.client_id);
    return { answer, kept: kept!, dropped: trimmed.map((event) => String(event.dropped)).join('\n') };
  }

  it("Cursor's registration: the two redirect URIs that pass are kept, the cursor:// one is left out and logged", async () => {
    const h = createHarness();
    const { answer, kept, dropped } = await registered(h, CURSOR_REGISTRATION);
    const acceptable = ['https://www.cursor.com/agents/mcp/oauth/callback', 'http://localhost:8787/callback'];
    assert.deepEqual(answer.redirect_uris, acceptable, 'the response lists exactly the URIs kept');
    assert.deepEqual(kept.redirectUris, acceptable);
    assert.match(dropped, /redirect_uris cursor:\/\/anysphere\.cursor-mcp\/oauth\/callback: redirect URI scheme cursor: is not allowed/);
  });

  it("with allowedRedirectSchemes ['cursor']: all three of Cursor's redirect URIs, nothing left out", async () => {
    const h = createHarness({ allowedRedirectSchemes: ['cursor'] });
    const { answer, dropped } = await registered(h, CURSOR_REGISTRATION);
    assert.deepEqual(answer.redirect_uris, CURSOR_REGISTRATION.redirect_uris);
    assert.equal(dropped, '');
  });

  it('a redirect URI that breaks the rules is left out beside good ones; with none left, each is named in the refusal', async () => {
    const h = createHarness();
    const { answer, dropped } = await registered(h, { ...VALID, redirect_uris: [REDIRECT_URI, 'http://evil.example/cb', 'javascript:alert(1)'] });
    assert.deepEqual(answer.redirect_uris, [REDIRECT_URI]);
    assert.match(dropped, /http:\/\/evil\.example\/cb: http redirect URIs are allowed only on a loopback host/);
    assert.match(dropped, /javascript:alert\(1\): redirect URI scheme javascript: is not allowed/);

    const refused = await expectOAuthError(
      await register(h, { ...VALID, redirect_uris: ['http://evil.example/cb', 'https://app.example/cb#x'] }),
      400,
      'invalid_redirect_uri',
    );
    assert.equal(
      refused.error_description,
      'no redirect URI can be registered: http://evil.example/cb: http redirect URIs are allowed only on a loopback host (localhost, 127.0.0.1, [::1]); use https; https://app.example/cb#x: redirect URI must not contain a fragment',
    );
  });

  it('a public client asking for jwt-bearer (as claude.ai does) keeps authorization_code and refresh_token', async () => {
    const h = createHarness();
    const { answer, kept, dropped } = await registered(h, {
      ...VALID,
      grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:jwt-bearer'],
    });
    assert.deepEqual(answer.grant_types, ['authorization_code', 'refresh_token']);
    assert.deepEqual(kept.grantTypes, ['authorization_code', 'refresh_token']);
    assert.match(dropped, /^grant_types urn:ietf:params:oauth:grant-type:jwt-bearer: needs a confidential client/);
    assert.equal(h.log.find((event) => event.event === 'client_metadata_trimmed')?.outcome, 'success');
  });

  it('grant and response types this server does not support are left out; refresh_token needs a grant that issues it', async () => {
    const h = createHarness();
    const { answer, dropped } = await registered(h, {
      ...VALID,
      grant_types: ['authorization_code', 'implicit', 'urn:example:grant'],
      response_types: ['code', 'token'],
    });
    assert.deepEqual(answer.grant_types, ['authorization_code']);
    assert.deepEqual(answer.response_types, ['code']);
    assert.match(dropped, /grant_types implicit: not a grant type this server supports; grant_types urn:example:grant: not a grant type/);
    assert.match(dropped, /response_types token: only code is supported/);

    const alone = await expectOAuthError(
      await register(h, { token_endpoint_auth_method: 'client_secret_basic', grant_types: ['client_credentials', 'refresh_token'] }),
      400,
      'invalid_client_metadata',
    );
    assert.match(
      alone.error_description ?? '',
      /client_credentials: client_credentials clients are created by an operator .*; refresh_token: issued only with authorization_code/,
    );
  });

  it('open registration leaves out client_credentials beside a user grant, and says why', async () => {
    const h = createHarness();
    const { answer, dropped } = await registered(h, {
      ...VALID,
      token_endpoint_auth_method: 'client_secret_basic',
      grant_types: ['authorization_code', 'client_credentials'],
    });
    assert.deepEqual(answer.grant_types, ['authorization_code']);
    assert.match(dropped, /client_credentials: client_credentials clients are created by an operator \(context-auth clients add\), not by open registration/);
    const refused = await expectOAuthError(
      await register(h, { token_endpoint_auth_method: 'client_secret_basic', grant_types: ['client_credentials'] }),
      400,
      'invalid_client_metadata',
    );
    assert.match(
      refused.error_description ?? '',
      /^no grant type this server can give this client: client_credentials: client_credentials clients are created by an operator/,
    );
  });

  it('scopes this server does not know are left out; a machine client with none of its scopes known is refused', async () => {
    const h = createHarness({ registration: { initialAccessToken: INITIAL_ACCESS_TOKEN } });
    const auth = { authorization: `Bearer ${INITIAL_ACCESS_TOKEN}` };
    const { answer, kept, dropped } = await registered(h, { ...VALID, scope: 'mcp:tools offline_access openid' }, auth);
    assert.equal(answer.scope, 'mcp:tools');
    assert.match(dropped, /scope openid: asked for in an authorization request, never registered/);
    assert.equal(kept.scope, 'mcp:tools');
    const none = await registered(h, { ...VALID, scope: 'openid profile' }, auth);
    assert.equal(none.answer.scope, undefined, 'a user-flow client asking only for unknown scopes is kept without a scope');
    const machine = { token_endpoint_auth_method: 'client_secret_basic', grant_types: ['client_credentials'], scope: 'root' };
    const refused = await expectOAuthError(await register(h, machine, auth), 400, 'invalid_client_metadata');
    assert.equal(refused.error_description, 'scope not supported: root');
  });

  it('display fields that cannot be shown safely are left out; the client is kept', async () => {
    const h = createHarness();
    const { answer, dropped } = await registered(h, {
      ...VALID,
      client_name: '  ',
      client_uri: 'javascript:alert(1)',
      logo_uri: 'http://app.example.com/logo.png',
      policy_uri: '/policy',
      tos_uri: 'https://app.example.com/tos',
      contacts: Array.from({ length: 11 }, (_, i) => `a${i}@example.com`),
    });
    for (const field of ['client_name', 'client_uri', 'logo_uri', 'policy_uri', 'contacts']) assert.equal(answer[field], undefined, field);
    assert.equal(answer.tos_uri, 'https://app.example.com/tos');
    assert.match(dropped, /client_uri javascript:alert\(1\): not an https URL/);
  });

  it('keys of a client that does not use private_key_jwt are left out, not kept unused', async () => {
    const h = createHarness();
    const { answer, kept, dropped } = await registered(h, { ...VALID, jwks_uri: 'https://app.example.com/jwks', token_endpoint_auth_signing_alg: 'RS256' });
    assert.equal(answer.jwks_uri, undefined);
    assert.equal(kept.metadata.jwks_uri, undefined);
    assert.match(dropped, /jwks_uri https:\/\/app\.example\.com\/jwks: only a private_key_jwt client has keys; this one uses none/);
    // Named in the log by its kind only: a key set may nest without end.
    const nested = await register(
      h,
      `{"redirect_uris":["${REDIRECT_URI}"],"token_endpoint_auth_method":"none","jwks":{"keys":${'['.repeat(20000)}${']'.repeat(20000)}}}`,
    );
    assert.equal(nested.status, 201, await nested.clone().text());
    const { client_id } = (await nested.json()) as { client_id: string };
    const logged = h.log.find((event) => event.event === 'client_metadata_trimmed' && event.client_id === client_id);
    assert.match(String(logged?.dropped), /^jwks \(an object\): only a private_key_jwt client has keys/);
  });

  describe('token_endpoint_auth_methods_supported: the strongest method both sides support, the singular field preferred', () => {
    const keys = { jwks_uri: 'https://app.example.com/jwks' };
    for (const [label, fields, method] of [
      [
        'a list alone: its strongest',
        { token_endpoint_auth_method: undefined, token_endpoint_auth_methods_supported: ['none', 'client_secret_post'] },
        'client_secret_post',
      ],
      [
        'a list alone, with keys: private_key_jwt',
        { token_endpoint_auth_method: undefined, token_endpoint_auth_methods_supported: ['none', 'private_key_jwt'], ...keys },
        'private_key_jwt',
      ],
      [
        'private_key_jwt listed without keys: the next',
        { token_endpoint_auth_method: undefined, token_endpoint_auth_methods_supported: ['private_key_jwt', 'none'] },
        'none',
      ],
      [
        'a list partly supported',
        { token_endpoint_auth_method: undefined, token_endpoint_auth_methods_supported: ['tls_client_auth', 'client_secret_basic'] },
        'client_secret_basic',
      ],
      [
        'the singular preference, when supported',
        { token_endpoint_auth_method: 'none', token_endpoint_auth_methods_supported: ['none', 'private_key_jwt'], ...keys },
        'none',
      ],
      [
        'an unsupported preference: the strongest of the list',
        { token_endpoint_auth_method: 'tls_client_auth', token_endpoint_auth_methods_supported: ['tls_client_auth', 'none'] },
        'none',
      ],
    ] as const) {
      it(`${label}: ${method}`, async () => {
        const h = createHarness();
        const { answer } = await registered(h, { ...VALID, ...fields });
        assert.equal(answer.token_endpoint_auth_method, method);
        assert.equal(answer.token_endpoint_auth_methods_supported, undefined, 'the list is read, not kept');
        assert.equal(typeof answer.client_secret === 'string', method.startsWith('client_secret'), 'a secret exactly for a secret method');
      });
    }
  });
});
