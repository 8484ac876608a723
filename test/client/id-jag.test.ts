/**
 * Enterprise-managed authorization, the client's part at the identity provider: the RFC 8693
 * token exchange of an ID token for an ID-JAG (what it sends, how it authenticates, what answer
 * it accepts), against an identity provider on 127.0.0.1.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ClientError } from '../../src/client/errors.js';
import { enterpriseAssertion, requestIdJag } from '../../src/client/id-jag.js';
import { serveHandler, type ServedApp } from './setup.js';

const ID_JAG = 'urn:ietf:params:oauth:token-type:id-jag';
const A_JAG = 'eyJhbGciOiJFUzI1NiIsInR5cCI6Im9hdXRoLWlkLWphZytqd3QifQ.eyJzdWIiOiJhbGljZSJ9.c2ln';

describe('requestIdJag: token exchange at the identity provider', () => {
  let idp: ServedApp;
  let seen: { form: URLSearchParams; authorization: string | null }[];
  /** The token endpoint's next answer. */
  let answer: { status: number; body: unknown };
  let authMethods: string[];
  /** The issuer the metadata names: the IdP's own unless a test says otherwise. */
  let metadataIssuer: string | undefined;

  before(async () => {
    idp = await serveHandler(async (request) => {
      const url = new URL(request.url);
      if (url.pathname === '/.well-known/openid-configuration') {
        return Response.json({
          issuer: metadataIssuer ?? idp.origin,
          token_endpoint: `${idp.origin}/oauth2/token`,
          token_endpoint_auth_methods_supported: authMethods,
        });
      }
      if (url.pathname === '/oauth2/token') {
        seen.push({ form: new URLSearchParams(await request.text()), authorization: request.headers.get('authorization') });
        return Response.json(answer.body, { status: answer.status });
      }
      return new Response('not found', { status: 404 });
    });
  });
  after(() => idp.close());
  beforeEach(() => {
    seen = [];
    answer = { status: 200, body: { access_token: A_JAG, issued_token_type: ID_JAG, token_type: 'N_A', expires_in: 300 } };
    authMethods = ['client_secret_basic', 'client_secret_post'];
    metadataIssuer = undefined;
  });

  const request = (extra: object = {}) =>
    requestIdJag({
      issuer: idp.origin,
      clientId: 'agent-at-idp',
      idToken: 'the-id-token',
      audience: 'https://as.example.com',
      resource: 'https://mcp.example.com/mcp',
      ...extra,
    });

  it('sends the token exchange the ID-JAG needs, found through the IdP metadata, and returns the ID-JAG', async () => {
    assert.equal(await request({ scope: 'tools.read' }), A_JAG);
    assert.equal(seen.length, 1);
    assert.deepEqual(Object.fromEntries(seen[0]!.form), {
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      requested_token_type: ID_JAG,
      subject_token: 'the-id-token',
      subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
      audience: 'https://as.example.com',
      resource: 'https://mcp.example.com/mcp',
      scope: 'tools.read',
      client_id: 'agent-at-idp',
    });
    assert.equal(seen[0]!.authorization, null, 'a public client at the IdP: no secret');
  });

  it('a confidential client at the IdP: client_secret_basic, or client_secret_post where that is all it takes', async () => {
    await request({ clientSecret: 'idp-secret' });
    assert.equal(seen[0]!.authorization, `Basic ${Buffer.from('agent-at-idp:idp-secret').toString('base64')}`);
    authMethods = ['client_secret_post'];
    await request({ clientSecret: 'idp-secret' });
    assert.equal(seen[1]!.authorization, null);
    assert.equal(seen[1]!.form.get('client_secret'), 'idp-secret');
  });

  it('takes the token endpoint itself instead of the issuer', async () => {
    assert.equal(
      await requestIdJag({
        tokenEndpoint: `${idp.origin}/oauth2/token`,
        clientId: 'c',
        idToken: 't',
        audience: 'https://as.example.com',
        resource: 'https://r.example.com',
      }),
      A_JAG,
    );
    assert.equal(seen.length, 1);
  });

  const refusals: [string, { status: number; body: unknown }, RegExp][] = [
    [
      'another issued_token_type',
      { status: 200, body: { access_token: A_JAG, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', token_type: 'Bearer' } },
      /issued urn:ietf:params:oauth:token-type:access_token, not an ID-JAG/,
    ],
    ['no issued_token_type', { status: 200, body: { access_token: A_JAG, token_type: 'N_A' } }, /issued no issued_token_type, not an ID-JAG/],
    ['no JWT in access_token', { status: 200, body: { access_token: 'opaque', issued_token_type: ID_JAG } }, /no ID-JAG/],
    [
      'an error answer',
      { status: 400, body: { error: 'invalid_grant', error_description: 'the ID token expired' } },
      /failed: invalid_grant \(the ID token expired\)/,
    ],
    ['an answer that is not JSON', { status: 502, body: 'bad gateway' }, /failed: HTTP 502/],
  ];
  for (const [what, refusal, message] of refusals) {
    it(`refuses ${what}, naming the IdP`, async () => {
      answer = refusal;
      await assert.rejects(
        request(),
        (error: Error) =>
          error instanceof ClientError && error.code === 'assertion_unavailable' && message.test(error.message) && error.message.includes(idp.origin),
      );
    });
  }

  it('refuses an identity provider over plain http off this machine', async () => {
    await assert.rejects(request({ issuer: 'http://idp.example.com' }), (error: Error) => error instanceof ClientError && error.code === 'insecure_url');
  });

  it('enterpriseAssertion: metadata naming another issuer is refused, and looked up again on the next call', async () => {
    metadataIssuer = 'https://evil.example.com';
    // The ID token comes after the metadata look-up has failed, as a file read may.
    const idToken = () => new Promise<string>((resolve) => setTimeout(() => resolve('id-token'), 200));
    const assertion = enterpriseAssertion({ issuer: idp.origin, clientId: 'agent-at-idp', idToken });
    const context = { issuer: 'https://as.example.com', tokenEndpoint: 'https://as.example.com/token', resource: 'https://mcp.example.com/mcp' };
    await assert.rejects(
      assertion(context),
      (error: Error) => error instanceof ClientError && error.code === 'metadata_mismatch' && error.message.includes('evil.example.com'),
    );
    assert.equal(seen.length, 0, 'nothing was sent to a token endpoint');
    metadataIssuer = undefined;
    assert.equal(await assertion(context), A_JAG);
  });

  it('enterpriseAssertion: an ID-JAG for the authorization server and resource being asked, the ID token read each time', async () => {
    const tokens = ['id-token-1', 'id-token-2'];
    const assertion = enterpriseAssertion({ issuer: idp.origin, clientId: 'agent-at-idp', idToken: () => tokens.shift()! });
    const context = { issuer: 'https://as.example.com', tokenEndpoint: 'https://as.example.com/token', resource: 'https://mcp.example.com/mcp' };
    assert.equal(await assertion(context), A_JAG);
    assert.equal(await assertion({ ...context, scope: 'a b' }), A_JAG);
    assert.deepEqual(
      seen.map((s) => [s.form.get('subject_token'), s.form.get('audience'), s.form.get('resource'), s.form.get('scope')]),
      [
        ['id-token-1', 'https://as.example.com', 'https://mcp.example.com/mcp', null],
        ['id-token-2', 'https://as.example.com', 'https://mcp.example.com/mcp', 'a b'],
      ],
    );
  });
});
