/**
 * `context-auth/admin`, through its entry point, on a real SQLite store: what the CLI's server-side
 * verbs do, with their refusals as answers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  addClient,
  addUser,
  listConsents,
  listSigningKeys,
  listUsers,
  removeClient,
  removeUser,
  revokeConsent,
  rotateSigningKeys,
  setAdministrator,
  setPassword,
} from '../../src/admin/index.js';
import { verifyPassword } from '../../src/core/passwords.js';
import type { FullStore } from '../../src/store/index.js';
import { SQLITE, type OpenedStore } from '../helpers/stores.js';

const NOW = 1_800_000_000;

describe('context-auth/admin', () => {
  let opened: OpenedStore;
  let store: FullStore;
  before(async () => {
    opened = await SQLITE.open();
    store = opened.store;
  });
  after(() => opened.close());

  it('adds a user with a hashed password, and refuses a bad name, a short password and a name taken', async () => {
    const added = await addUser(store, { username: 'alice', password: 'correct horse', admin: true }, NOW);
    assert.ok('user' in added);
    const stored = await store.getUser({ username: 'alice' });
    assert.equal(stored?.admin, true);
    assert.notEqual(stored?.passwordHash, 'correct horse');
    assert.equal(await verifyPassword('correct horse', stored!.passwordHash!), true);
    assert.deepEqual(await addUser(store, { username: 'a b', password: 'correct horse' }, NOW), {
      refused: 'A username is 1 to 64 letters, digits or . _ @ + -',
    });
    assert.deepEqual(await addUser(store, { username: 'bob', password: 'short' }, NOW), { refused: 'The password must have at least 8 characters.' });
    assert.deepEqual(await addUser(store, { username: 'alice', password: 'another one' }, NOW), { refused: 'A user named alice exists already.' });
    assert.equal(await store.getUser({ username: 'bob' }), undefined);
  });

  it('lists users with how they sign in, never a password hash', async () => {
    const users = await listUsers(store);
    assert.deepEqual(
      users.map(({ username, admin, signsInWith }) => ({ username, admin, signsInWith })),
      [{ username: 'alice', admin: true, signsInWith: 'password' }],
    );
    assert.ok(!JSON.stringify(users).includes('scrypt'));
  });

  it('sets a password, or says there is no such user', async () => {
    assert.deepEqual(await setPassword(store, 'alice', 'a new password'), { sessionsEnded: 0 });
    assert.equal(await verifyPassword('a new password', (await store.getUser({ username: 'alice' }))!.passwordHash!), true);
    assert.deepEqual(await setPassword(store, 'nobody', 'a new password'), { refused: 'There is no user named nobody.' });
    assert.deepEqual(await setPassword(store, 'alice', 'short'), { refused: 'The password must have at least 8 characters.' });
  });

  it('adds clients as an operator does: a machine client gets mcp:tools and a secret; a value the server would drop refuses it', async () => {
    const machine = await addClient(store, { name: 'nightly job', grantTypes: ['client_credentials'] }, NOW);
    assert.ok('registration' in machine);
    assert.equal(typeof machine.registration.client_secret, 'string');
    const record = await store.getClient(machine.registration.client_id as string);
    assert.equal(record?.scope, 'mcp:tools');
    assert.equal(record?.registeredBy, 'admin');
    assert.notEqual(record?.clientSecretHash, machine.registration.client_secret);

    const browser = await addClient(store, { name: 'app', redirectUris: ['http://127.0.0.1:9000/callback'] }, NOW);
    assert.ok('registration' in browser);
    assert.equal(browser.registration.client_secret, undefined);
    assert.deepEqual(browser.registration.grant_types, ['authorization_code', 'refresh_token']);

    assert.deepEqual(await addClient(store, { name: 'nothing' }, NOW), {
      refused: 'Cannot add the client: give redirect URIs for a browser client, or the client_credentials grant.',
    });
    assert.deepEqual(
      await addClient(store, { name: 'both', grantTypes: ['client_credentials'], jwks: { keys: [] }, jwksUri: 'https://example.com/jwks' }, NOW),
      {
        refused: 'Cannot add the client: give its keys (jwks) or where they are (jwksUri), not both.',
      },
    );
    const unsupported = await addClient(
      store,
      { name: 'greedy', grantTypes: ['client_credentials'], scope: 'mcp:tools', redirectUris: ['ftp://example.com/cb'] },
      NOW,
    );
    assert.ok('refused' in unsupported && unsupported.refused.startsWith('Cannot add the client: '), JSON.stringify(unsupported));
    assert.equal((await store.listClients()).length, 2);

    assert.deepEqual(await removeClient(store, browser.registration.client_id as string, NOW), { clientId: browser.registration.client_id, removed: true });
    assert.deepEqual(await removeClient(store, 'nope', NOW), { clientId: 'nope', removed: false });
  });

  it('rotates and lists signing keys, public parts only', async () => {
    const first = await rotateSigningKeys(store, NOW);
    const second = await rotateSigningKeys(store, NOW + 1);
    assert.equal(second.status, 'current');
    const keys = await listSigningKeys(store);
    assert.deepEqual(
      new Map(keys.map((k) => [k.kid, k.status])),
      new Map([
        [second.kid, 'current'],
        [first.kid, 'previous'],
      ]),
    );
    for (const key of keys) {
      assert.equal(key.publicJwk.d, undefined, 'no private part');
      assert.equal(key.publicJwk.kty, 'EC');
    }
  });

  it('lists and revokes consents, refusing an unknown user', async () => {
    assert.deepEqual(await listConsents(store, { username: 'nobody' }), { refused: 'There is no user named nobody.' });
    assert.deepEqual(await listConsents(store, { username: 'alice' }), { consents: [] });
    assert.deepEqual(await revokeConsent(store, 'alice', 'nope', NOW), { refused: 'There is no client nope.' });
  });

  it('makes and unmakes administrators, and removes users', async () => {
    assert.deepEqual(await setAdministrator(store, 'alice', false), { username: 'alice', admin: false, found: true });
    assert.deepEqual(await setAdministrator(store, 'nobody', true), { username: 'nobody', admin: true, found: false });
    assert.deepEqual(await removeUser(store, 'alice', NOW), { username: 'alice', removed: true });
    assert.deepEqual(await listUsers(store), []);
  });
});
