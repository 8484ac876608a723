/**
 * RFC 9700 §4.4 (mix-up attacks), defended by RFC 9207: every authorization response, a code or
 * an error, names its issuer in `iss`, and the metadata says so, so a client talking to several
 * authorization servers can tell whose response it holds and never sends a code to the wrong one.
 * (Our client's half of the defence, refusing a foreign `iss`, is test/client/issuer-binding.test.ts.)
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { authorize, authorizationRequest, authorizeUrl, Browser, ISSUER, registerClient, REVISIONS } from '../helpers/harness.js';
import { onEveryStore, USER } from './setup.js';

const revision = REVISIONS[1];

onEveryStore('§4.4 mix-up', (env) => {
  it('the metadata promises iss in authorization responses', async () => {
    const h = await env.target();
    const metadata = (await (await h.request('/.well-known/oauth-authorization-server')).json()) as Record<string, unknown>;
    assert.equal(metadata.issuer, ISSUER);
    assert.equal(metadata.authorization_response_iss_parameter_supported, true);
  });

  it('a code response names the issuer in iss, beside code and state', async () => {
    const h = await env.target();
    const client = await registerClient(h);
    const { location } = await authorize(h, { client, user: USER, resource: revision.resource, state: 'mix-up-state' });
    assert.equal(location.searchParams.get('iss'), ISSUER);
    assert.equal(location.searchParams.get('state'), 'mix-up-state');
    assert.ok(location.searchParams.get('code'));
  });

  it('a denial names the issuer in iss too', async () => {
    const h = await env.target();
    const client = await registerClient(h);
    const { location } = await authorize(h, { client, user: USER, resource: revision.resource, decision: 'deny' });
    assert.equal(location.searchParams.get('error'), 'access_denied');
    assert.equal(location.searchParams.get('iss'), ISSUER);
    assert.equal(location.searchParams.get('code'), null);
  });

  it('an error sent back to a trusted redirect URI (bad request) names the issuer', async () => {
    const h = await env.target();
    const client = await registerClient(h);
    const { params } = authorizationRequest(client, revision, { response_type: 'token' });
    const response = await new Browser(h).fetch(authorizeUrl(params));
    assert.equal(response.status, 303);
    const location = new URL(response.headers.get('location')!);
    assert.equal(location.searchParams.get('error'), 'unsupported_response_type');
    assert.equal(location.searchParams.get('iss'), ISSUER);
  });

  it('an iss the attacker adds to the registered redirect URI is replaced by ours, not repeated', async () => {
    const h = await env.target();
    const client = await registerClient(h, { redirect_uris: ['http://127.0.0.1:33333/callback?iss=https%3A%2F%2Fevil.example'] });
    const { location } = await authorize(h, {
      client,
      user: USER,
      resource: revision.resource,
      redirectUri: 'http://127.0.0.1:33333/callback?iss=https%3A%2F%2Fevil.example',
    });
    assert.deepEqual(location.searchParams.getAll('iss'), [ISSUER]);
  });
});
