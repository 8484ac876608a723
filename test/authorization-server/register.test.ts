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

  it('defaults token_endpoint_auth_method to client_secret_basic (RFC 7591 §2)', async () => {
    const client = await registerClient(createHarness(), { token_endpoint_auth_method: undefined });
    assert.equal(client.token_endpoint_auth_method, 'client_secret_basic');
    assert.equal(typeof client.client_secret, 'string');
  });

  it('accepts https redirect URIs and http ones on loopback hosts', async () => {
    const h = createHarness();
    const uris = ['https://app.example.com/callback', 'http://localhost:8080/cb', 'http://127.0.0.1/cb', 'http://[::1]:3000/cb', 'https://app.example.com/cb?x=1'];
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
    ['one bad among good ones', [REDIRECT_URI, 'http://evil.example/cb']],
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
    ['an unsupported scope', { scope: 'mcp:tools root' }],
    ['a scope with a bad character', { scope: 'mcp:tools "quoted"' }],
    ['scope as an array', { scope: ['mcp:tools'] }],
    ['an empty client_name', { client_name: '  ' }],
    ['a long client_name', { client_name: 'x'.repeat(201) }],
    ['a numeric client_name', { client_name: 5 }],
    ['a javascript: client_uri', { client_uri: 'javascript:alert(1)' }],
    ['an http logo_uri on a public host', { logo_uri: 'http://app.example.com/logo.png' }],
    ['a relative policy_uri', { policy_uri: '/policy' }],
    ['contacts as a string', { contacts: 'admin@example.com' }],
    ['too many contacts', { contacts: Array.from({ length: 11 }, (_, i) => `a${i}@example.com`) }],
    ['jwks', { jwks: { keys: [] } }],
    ['jwks_uri', { jwks_uri: 'https://app.example.com/jwks' }],
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
    const metadata = validateClientMetadata({ client_name: 'Ops', redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none', grant_types: ['authorization_code'], scope: 'mcp:tools' }, h.server.metadata.scopes_supported);
    const { client } = await createClient(h.store, metadata, h.clock.now, { registeredBy: 'admin' });
    const user = await addUser(h);
    const { location } = await authorize(h, { client: { client_id: client.clientId }, user, scope: 'mcp:admin' });
    assert.equal(location.searchParams.get('error'), 'invalid_scope');
  });
});

describe('registration refuses control characters in names and contacts', () => {
  for (const [field, value] of [
    ['client_name', 'Evil\u0000Client'],
    ['software_id', 'id\nwith newline'],
    ['contacts', ['ops@example.com\u0007']],
  ] as const) {
    it(`in ${field}`, async () => {
      const h = createHarness();
      await expectOAuthError(await register(h, { ...VALID, [field]: value }), 400, 'invalid_client_metadata');
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
    return h.request('/register', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token_endpoint_auth_method: 'none', ...body }) });
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

  it('an unknown application_type is refused; none at all is accepted as before', async () => {
    assert.equal((await register({ application_type: 'desktop', redirect_uris: ['http://127.0.0.1/cb'] })).status, 400);
    assert.equal((await register({ redirect_uris: ['http://127.0.0.1/cb'] })).status, 201);
  });
});
