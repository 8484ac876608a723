/**
 * Attacks on token exchange for delegation (RFC 8693 §5, the spec's "no token passthrough"), on
 * each real store, against the authorization server and the co-hosted /mcp as `serve` wires them:
 * - escalation: the person's own client, holding their token for the notes server, asks to
 *   exchange it for a token for /mcp (which the person never consented to for it): refused, and
 *   the token itself is refused at /mcp;
 * - a delegated token outliving the person's revoked grant: the grant is revoked at one server,
 *   and a replica on the same store refuses both the delegated token at its /mcp and a new
 *   exchange of the subject token.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { validateClientMetadata } from '../../src/authorization-server/checks/client-metadata.js';
import { registerClient as createClient } from '../../src/authorization-server/clients.js';
import type { AuthorizationServerOptions } from '../../src/authorization-server/index.js';
import { TOKEN_EXCHANGE_GRANT_TYPE } from '../../src/core/id-jag.js';
import { ACCESS_TOKEN_TYPE } from '../../src/core/token-exchange.js';
import type { CoHosted } from '../helpers/co-hosted.js';
import { obtainTokensAs, OTHER_RESOURCE, postAs, registerClient, RESOURCE, type Revision, type TestClient } from '../helpers/harness.js';
import { assertUnchanged, expectRefused, expectServed, ISSUED, onEveryStore, USER, whoami } from './setup.js';

/** Revision B's flow, for the notes server (OTHER_RESOURCE) rather than /mcp. */
const FOR_NOTES = { name: 'Revision B, for the notes server', resource: OTHER_RESOURCE } as unknown as Revision;

/** The notes server's client (resource OTHER_RESOURCE's server), made on the store; the policy lets it delegate to /mcp. */
async function notesServer(store: CoHosted['store'], now: number): Promise<{ client: TestClient; options: Partial<AuthorizationServerOptions> }> {
  const metadata = validateClientMetadata({ token_endpoint_auth_method: 'client_secret_basic', grant_types: ['client_credentials'] }, [
    'mcp:tools',
    'mcp:admin',
  ]);
  const { client, clientSecret } = await createClient(store, metadata, now, { registeredBy: 'admin' });
  return {
    client: { client_id: client.clientId, client_secret: clientSecret!, token_endpoint_auth_method: 'client_secret_basic' },
    options: { tokenExchange: { delegations: [{ client: client.clientId, from: OTHER_RESOURCE, to: RESOURCE }] } },
  };
}

function exchange(target: CoHosted, caller: TestClient, subjectToken: string): Promise<Response> {
  return postAs(target, '/token', caller, {
    grant_type: TOKEN_EXCHANGE_GRANT_TYPE,
    subject_token: subjectToken,
    subject_token_type: ACCESS_TOKEN_TYPE,
    resource: RESOURCE,
  });
}

async function expectError(response: Response, error: string, pattern: RegExp): Promise<void> {
  const body = (await response.json()) as { error: string; error_description: string };
  assert.equal(response.status, 400);
  assert.equal(body.error, error);
  assert.match(body.error_description, pattern);
}

onEveryStore('token exchange: escalation by the person’s own client', ({ target, counts }) => {
  it('refuses the client holding the person’s token for the notes server a token for /mcp; the token itself is refused there', async () => {
    const probe = await target();
    const notes = await notesServer(probe.store, probe.clock.now);
    const server = await target(notes.options);
    const client = await registerClient(server, { token_endpoint_auth_method: 'client_secret_basic' });
    const tokens = await obtainTokensAs(server, FOR_NOTES, client, { user: USER });
    const before = await counts();
    await expectError(await exchange(server, client, tokens.access_token!), 'unauthorized_client', /may not exchange tokens: no delegation rule names it/);
    await expectRefused(await whoami(server, `Bearer ${tokens.access_token!}`), 401, 'invalid_token');
    assertUnchanged(before, await counts(), ISSUED, 'an exchange by the person’s own client');
    // The notes server's own exchange of the same token is what the policy allows.
    assert.equal((await exchange(server, notes.client, tokens.access_token!)).status, 200);
  });
});

onEveryStore('token exchange: a delegated token outliving the person’s revoked grant', ({ target }) => {
  it('a replica on the same store refuses the delegated token and a new exchange once the grant is revoked elsewhere', async () => {
    const probe = await target();
    const notes = await notesServer(probe.store, probe.clock.now);
    const first = await target(notes.options);
    const replica = await target(notes.options);
    const client = await registerClient(first, { token_endpoint_auth_method: 'client_secret_basic' });
    const tokens = await obtainTokensAs(first, FOR_NOTES, client, { user: USER });
    const response = await exchange(first, notes.client, tokens.access_token!);
    assert.equal(response.status, 200);
    const delegated = ((await response.json()) as { access_token: string }).access_token;
    await expectServed(await whoami(replica, `Bearer ${delegated}`));
    // The person's client revokes its grant at the first server.
    assert.equal((await postAs(first, '/revoke', client, { token: tokens.refresh_token! })).status, 200);
    await replica.server.revocations.sync();
    await expectRefused(await whoami(replica, `Bearer ${delegated}`), 401, 'invalid_token');
    await expectError(await exchange(replica, notes.client, tokens.access_token!), 'invalid_grant', /the subject token has been revoked/);
  });
});
