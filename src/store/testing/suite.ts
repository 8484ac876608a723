/**
 * The behaviour suite every store passes: the memory, SQLite and PostgreSQL stores, and a store
 * written for another database. Each test gets a fresh, empty store from `open`. The tests of an
 * optional capability run where the store has it, and are skipped, saying so, where it does not
 * (unless the store is expected to have it: then they fail).
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { hashSecret } from '../../core/secrets.js';
import { capabilitiesOf, CAPABILITY_METHODS, type StoreCapability } from '../capabilities.js';
import { SPENT_KEY_CHARS } from '../internal.js';
import {
  StoreConflictError,
  type AuditEventQuery,
  type AuthorizationCodeRecord,
  type ClientRecord,
  type ConsentRecord,
  type ConsumeResult,
  type FullStore,
  type GrantRecord,
  type RefreshResult,
  type RefreshTokenRecord,
  type RepeatRefreshRequest,
  type RepeatRefreshResult,
  type SpentRefreshTokenRecord,
  type Store,
  type UserRecord,
} from '../store.js';
import {
  NOW,
  addUser,
  issueFirstToken,
  makeAuditEvent,
  makeClient,
  makeCode,
  makeConsent,
  makeDeviceAuthorization,
  makeGrant,
  makeIdentity,
  makeInteraction,
  makeRefreshToken,
  makeSession,
  makeSigningKey,
  makeUpstreamSession,
  makeUser,
  refreshOf,
  repeatOf,
  uniqueId,
} from './records.js';

export interface OpenedStore {
  store: Store;
  /** Closes the store, and removes whatever `open` made for it if it should not outlive the test. */
  close(): Promise<void>;
}

export interface StoreSuiteOptions {
  /** The name the suite's tests are reported under. */
  name: string;
  /** A fresh, empty store for one test. */
  open(): Promise<OpenedStore>;
  /**
   * Capabilities the store is meant to have ('all' for every one): a test checks they are there,
   * and their tests fail rather than skip. Without this, the tests of a capability the store does
   * not have are skipped, each with the reason.
   */
  capabilities?: readonly StoreCapability[] | 'all';
  /**
   * The store's sweepExpired deletes in batches and rests through `options.pause` between them
   * (as the SQL stores do): checked when true. False (the default) for a sweep in one pass.
   */
  batchedSweep?: boolean;
}

const ALL_CAPABILITIES = Object.keys(CAPABILITY_METHODS) as StoreCapability[];

/** What the refresh tests read a refreshGrant result as: the spent token's record when it succeeded. */
type RotateResult = Exclude<RefreshResult, { status: 'ok' | 'upstream' }> | { status: 'ok'; record: RefreshTokenRecord };

/** Asserts the status of a consume/rotate result and returns its record. */
function expectRecord<T>(result: ConsumeResult<T> | { status: 'revoked'; record: T }, status: string): T;
function expectRecord<S extends RotateResult['status']>(result: RotateResult, status: S): Extract<RotateResult, { status: S; record: unknown }>['record'];
function expectRecord(result: { status: string; record?: unknown }, status: string): unknown {
  assert.equal(result.status, status);
  assert.ok('record' in result, `a ${status} result carries the record`);
  return result.record;
}

/** Runs `make` `count` times, a few at a time (as many as a small pool of connections serves at once). */
async function inBatches<T>(count: number, make: (index: number) => Promise<T>): Promise<T[]> {
  const made: T[] = [];
  for (let from = 0; from < count; from += 8) {
    made.push(...(await Promise.all(Array.from({ length: Math.min(8, count - from) }, (_, i) => make(from + i)))));
  }
  return made;
}

/** Registers the suite's tests (node:test describe/it blocks) for the store `options.open` opens. */
export function runStoreSuite(options: StoreSuiteOptions): void {
  const expected = options.capabilities === 'all' ? ALL_CAPABILITIES : (options.capabilities ?? []);

  describe(options.name, () => {
    let opened: OpenedStore;
    // Typed with every capability; a test that uses one declares it (itNeeds), so it runs only
    // where the store has it.
    let store: FullStore;

    beforeEach(async () => {
      opened = await options.open();
      store = opened.store as FullStore;
    });
    afterEach(async () => {
      await opened.close();
    });

    /** A test that needs optional capabilities of the store: skipped, saying why, on a store without them. */
    function itNeeds(needs: StoreCapability | StoreCapability[], name: string, body: () => Promise<void>): void {
      const wanted = typeof needs === 'string' ? [needs] : needs;
      it(`${name} [${wanted.join(', ')}]`, async (t) => {
        const present = capabilitiesOf(opened.store);
        const missing = wanted.filter((capability) => !present.includes(capability));
        const missingExpected = missing.filter((capability) => expected.includes(capability));
        assert.deepEqual(missingExpected, [], `the store was expected to have these capabilities: ${missingExpected.join(', ')}`);
        if (missing.length > 0) {
          t.skip(`the store has no ${missing.join(' or ')} capability (optional)`);
          return;
        }
        await body();
      });
    }

    if (expected.length > 0) {
      it(`has the capabilities it is meant to have: ${expected.join(', ')}`, () => {
        assert.deepEqual(capabilitiesOf(opened.store).filter((capability) => expected.includes(capability)), expected);
      });
    }

    /** A client and a user (the user saved through the core contract: one who signs in upstream). */
    async function parties(): Promise<{ client: ClientRecord; user: UserRecord }> {
      const client = makeClient();
      await store.createClient(client);
      return { client, user: await addUser(store) };
    }

    /** A client, a user and an authorization_code grant between them. */
    async function seed(grantOverrides: Partial<GrantRecord> = {}) {
      const { client, user } = await parties();
      const grant = makeGrant(client.clientId, user.id, grantOverrides);
      await store.createGrant(grant);
      return { client, user, grant };
    }

    /**
     * A grant of `client` and `user` whose code was redeemed at NOW for its first refresh token
     * (`tokenOverrides`) and an access token expiring at `accessExpiresAt` (0: none to speak of).
     */
    async function familyOf(client: ClientRecord, user: UserRecord, grantOverrides: Partial<GrantRecord> = {}, tokenOverrides: Partial<RefreshTokenRecord> = {}, accessExpiresAt = 0) {
      const made = makeGrant(client.clientId, user.id, grantOverrides);
      const token = makeRefreshToken(made, tokenOverrides);
      const code = await issueFirstToken(store, made, token, { accessExpiresAt });
      const grant: GrantRecord = { ...made, accessExpiresAt: Math.max(made.accessExpiresAt ?? 0, accessExpiresAt) };
      return { grant, token, code };
    }

    /** familyOf a new client and user. */
    async function family(grantOverrides: Partial<GrantRecord> = {}, tokenOverrides: Partial<RefreshTokenRecord> = {}, accessExpiresAt = 0) {
      const { client, user } = await parties();
      return { client, user, ...(await familyOf(client, user, grantOverrides, tokenOverrides, accessExpiresAt)) };
    }

    /** A redemption that issues nothing: the code's consumption alone. */
    const consume = (codeHash: string, now: number) => store.redeemAuthorizationCode(codeHash, now, () => undefined);

    /** A refresh from `next`'s client, read as a rotation: the spent record, or why nothing was spent. */
    async function rotate(oldHash: string, next: RefreshTokenRecord, now: number, accessExpiresAt = now + 600): Promise<RotateResult> {
      const live = await store.getRefreshToken(oldHash);
      const result = await store.refreshGrant(refreshOf(oldHash, next, now, { accessExpiresAt }));
      if (result.status === 'upstream') throw new Error('no upstream grants here');
      return result.status === 'ok' ? { status: 'ok', record: live! } : result;
    }

    describe('clients', () => {
      it('saveClient creates, then replaces the metadata and keeps the creation time', async () => {
        const client = makeClient({ clientId: 'https://app.example/client.json', clientName: 'First' });
        await store.saveClient(client);
        assert.deepEqual(await store.getClient(client.clientId), client);
        await store.saveClient({ ...client, clientName: 'Second', redirectUris: ['https://app.example/other'], createdAt: NOW + 100 });
        assert.deepEqual(await store.getClient(client.clientId), { ...client, clientName: 'Second', redirectUris: ['https://app.example/other'] });
      });

      itNeeds('upkeep', 'touchClient records use at most once a day; sweeping removes dynamic clients unused since a time', async () => {
        const used = makeClient();
        const unused = makeClient();
        const admin = makeClient({ registeredBy: 'admin' });
        for (const client of [used, unused, admin]) await store.createClient(client);
        await store.touchClient(used.clientId, NOW + 10);
        await store.touchClient(used.clientId, NOW + 20);
        assert.equal((await store.getClient(used.clientId))?.lastUsedAt, NOW + 10, 'within a day, not written again');
        await store.touchClient(used.clientId, NOW + 10 + 86_400);
        assert.equal((await store.getClient(used.clientId))?.lastUsedAt, NOW + 10 + 86_400);
        await store.saveClient({ ...used, clientName: 'refetched' });
        assert.equal((await store.getClient(used.clientId))?.lastUsedAt, NOW + 10 + 86_400, 'saveClient keeps the last use');

        const user = await addUser(store);
        const grant = makeGrant(unused.clientId, user.id);
        await store.createGrant(grant);
        await store.sweepExpired(NOW, { unusedClientsBefore: NOW + 100 });
        assert.ok(await store.getClient(used.clientId));
        assert.ok(await store.getClient(admin.clientId), 'operators\' clients are never swept');
        assert.equal(await store.getClient(unused.clientId), undefined);
        assert.equal(await store.getGrant(grant.id), undefined, 'with everything issued to it');
      });

      it('round-trips every field', async () => {
        const client = makeClient({
          clientSecretHash: 'secret-hash',
          tokenEndpointAuthMethod: 'client_secret_basic',
          grantTypes: ['client_credentials'],
          clientName: null,
          scope: 'read write',
          canIntrospect: true,
          registeredBy: 'admin',
        });
        await store.createClient(client);
        assert.deepEqual(await store.getClient(client.clientId), client);
        const publicClient = makeClient();
        await store.createClient(publicClient);
        assert.deepEqual(await store.getClient(publicClient.clientId), publicClient);
      });

      it('returns undefined for an unknown client', async () => {
        assert.equal(await store.getClient('nope'), undefined);
      });

      it('refuses a duplicate client id', async () => {
        const client = makeClient();
        await store.createClient(client);
        await assert.rejects(store.createClient(makeClient({ clientId: client.clientId })), StoreConflictError);
        assert.deepEqual(await store.getClient(client.clientId), client);
      });

      itNeeds('administration', 'lists clients oldest first', async () => {
        const newer = makeClient({ createdAt: NOW + 10 });
        const older = makeClient({ createdAt: NOW - 10 });
        await store.createClient(newer);
        await store.createClient(older);
        assert.deepEqual(await store.listClients(), [older, newer]);
      });

      itNeeds('administration', 'deletes a client once', async () => {
        const client = makeClient();
        await store.createClient(client);
        assert.equal(await store.deleteClient(client.clientId), true);
        assert.equal(await store.getClient(client.clientId), undefined);
        assert.equal(await store.deleteClient(client.clientId), false);
        assert.equal(await store.deleteClient('nope'), false);
      });

      itNeeds('administration', 'deleting a client deletes its grants, codes, tokens, consents and interactions, and nothing else', async () => {
        const { client, user, grant, token: refresh, code } = await family();
        const other = makeClient();
        await store.createClient(other);
        const { grant: otherGrant, token: otherRefresh } = await familyOf(other, user);
        const interaction = makeInteraction(client.clientId);
        await store.createInteraction(interaction);
        await store.saveConsent(makeConsent(user.id, client.clientId));
        await store.saveConsent(makeConsent(user.id, other.clientId));

        assert.equal(await store.deleteClient(client.clientId), true);

        assert.equal(await store.getGrant(grant.id), undefined);
        assert.equal((await consume(code.codeHash, NOW)).status, 'missing');
        assert.equal(await store.getRefreshToken(refresh.tokenHash), undefined);
        assert.equal(await store.getInteraction(interaction.id, NOW), undefined);
        assert.deepEqual(await store.listConsents({ clientId: client.clientId }), []);

        assert.ok(await store.getUser({ id: user.id }));
        assert.ok(await store.getGrant(otherGrant.id));
        assert.ok(await store.getRefreshToken(otherRefresh.tokenHash));
        assert.equal((await store.listConsents({ userId: user.id })).length, 1);
      });
    });

    describe('users', () => {
      it('finds a user by id, by username and by an identity linked to them', async () => {
        const user = makeUser();
        const identity = makeIdentity(user);
        await store.createUserWithIdentity(user, identity);
        assert.deepEqual(await store.getUser({ id: user.id }), user);
        assert.deepEqual(await store.getUser({ username: user.username }), user);
        assert.deepEqual(await store.getUser({ identity }), user);
        assert.equal(await store.getUser({ id: 'nope' }), undefined);
        assert.equal(await store.getUser({ username: 'nope' }), undefined);
        assert.equal(await store.getUser({ id: user.username }), undefined, 'an id is not a username');
        assert.equal(await store.getUser({ username: user.id }), undefined, 'nor a username an id');
      });

      itNeeds('administration', 'refuses a taken username', async () => {
        const user = makeUser({ username: 'alice' });
        await store.createUser(user);
        await assert.rejects(store.createUser(makeUser({ username: 'alice' })), StoreConflictError);
        assert.deepEqual(await store.listUsers(), [user]);
      });

      itNeeds('administration', 'refuses a duplicate user id', async () => {
        const user = makeUser();
        await store.createUser(user);
        await assert.rejects(store.createUser(makeUser({ id: user.id })), StoreConflictError);
      });

      itNeeds('administration', 'lists users by username', async () => {
        const bob = makeUser({ username: 'bob' });
        const alice = makeUser({ username: 'alice' });
        await store.createUser(bob);
        await store.createUser(alice);
        assert.deepEqual(await store.listUsers(), [alice, bob]);
      });

      itNeeds('administration', 'deleting a user deletes their sessions, consents, interactions and grants, and nothing else', async () => {
        const { client, user, grant, token: refresh, code } = await family();
        const other = makeUser();
        await store.createUser(other);
        const otherGrant = makeGrant(client.clientId, other.id);
        await store.createGrant(otherGrant);

        const session = makeSession(user.id);
        const otherSession = makeSession(other.id);
        const interaction = makeInteraction(client.clientId, { userId: user.id });
        await store.createSession(session);
        await store.createSession(otherSession);
        await store.createInteraction(interaction);
        await store.saveConsent(makeConsent(user.id, client.clientId));
        await store.saveConsent(makeConsent(other.id, client.clientId));

        assert.equal(await store.deleteUser(user.username), true);

        assert.equal(await store.getUser({ id: user.id }), undefined);
        assert.equal(await store.getSession(session.idHash, NOW), undefined);
        assert.equal(await store.getInteraction(interaction.id, NOW), undefined);
        assert.deepEqual(await store.listConsents({ userId: user.id }), []);
        assert.equal(await store.getGrant(grant.id), undefined);
        assert.equal((await consume(code.codeHash, NOW)).status, 'missing');
        assert.equal(await store.getRefreshToken(refresh.tokenHash), undefined);

        assert.ok(await store.getClient(client.clientId));
        assert.ok(await store.getSession(otherSession.idHash, NOW));
        assert.ok(await store.getGrant(otherGrant.id));
        assert.equal((await store.listConsents({ userId: other.id })).length, 1);
        assert.equal(await store.deleteUser(user.username), false);
      });

      itNeeds('administration', 'a new password ends the user\'s sessions and pending sign-ins, and keeps their grants and other users\' sessions', async () => {
        const { client, user, grant } = await seed();
        const other = makeUser();
        await store.createUser(other);
        const sessions = [makeSession(user.id), makeSession(user.id)];
        for (const session of sessions) await store.createSession(session);
        const otherSession = makeSession(other.id);
        await store.createSession(otherSession);
        const signedIn = makeInteraction(client.clientId, { userId: user.id });
        const notYet = makeInteraction(client.clientId);
        await store.createInteraction(signedIn);
        await store.createInteraction(notYet);

        assert.deepEqual(await store.setUserPassword(user.username, 'scrypt$new'), { sessionsEnded: 2 });

        assert.equal((await store.getUser({ id: user.id }))?.passwordHash, 'scrypt$new');
        assert.equal((await store.getUser({ id: other.id }))?.passwordHash, other.passwordHash);
        for (const session of sessions) assert.equal(await store.getSession(session.idHash, NOW), undefined);
        assert.equal(await store.getInteraction(signedIn.id, NOW), undefined);
        assert.ok(await store.getInteraction(notYet.id, NOW));
        assert.ok(await store.getSession(otherSession.idHash, NOW));
        assert.ok(await store.getGrant(grant.id));
        assert.equal(await store.setUserPassword('nobody', 'scrypt$x'), undefined);
      });
    });

    describe('interactions', () => {
      it('round-trips and hides an expired interaction', async () => {
        const client = makeClient();
        await store.createClient(client);
        const interaction = makeInteraction(client.clientId, { expiresAt: NOW + 100 });
        await store.createInteraction(interaction);
        assert.deepEqual(await store.getInteraction(interaction.id, NOW + 99), interaction);
        assert.equal(await store.getInteraction(interaction.id, NOW + 100), undefined);
        assert.equal(await store.getInteraction(interaction.id, NOW + 1000), undefined);
        assert.equal(await store.getInteraction('nope', NOW), undefined);
      });

      it('records the user who signed in, one who exists', async () => {
        const { client, user } = await seed();
        const interaction = makeInteraction(client.clientId);
        await store.createInteraction(interaction);
        await store.updateInteraction(interaction.id, { userId: user.id });
        assert.equal((await store.getInteraction(interaction.id, NOW))?.userId, user.id);
        await assert.rejects(store.updateInteraction(interaction.id, { userId: 'no-such-user' }));
        assert.equal((await store.getInteraction(interaction.id, NOW))?.userId, user.id);
        await store.updateInteraction('nope', { userId: user.id });
      });

      it('is consumed once', async () => {
        const client = makeClient();
        await store.createClient(client);
        const interaction = makeInteraction(client.clientId);
        await store.createInteraction(interaction);
        assert.deepEqual(await store.consumeInteraction(interaction.id, NOW), interaction);
        assert.equal(await store.consumeInteraction(interaction.id, NOW), undefined);
        assert.equal(await store.getInteraction(interaction.id, NOW), undefined);
      });

      it('cannot be consumed once expired, nor when unknown', async () => {
        const client = makeClient();
        await store.createClient(client);
        const interaction = makeInteraction(client.clientId, { expiresAt: NOW });
        await store.createInteraction(interaction);
        assert.equal(await store.consumeInteraction(interaction.id, NOW), undefined);
        assert.equal(await store.consumeInteraction('nope', NOW), undefined);
      });

      it('refuses an interaction for an unknown client', async () => {
        await assert.rejects(store.createInteraction(makeInteraction('no-such-client')));
      });

      it('concurrent consumers get it exactly once', async () => {
        const client = makeClient();
        await store.createClient(client);
        const interaction = makeInteraction(client.clientId);
        await store.createInteraction(interaction);
        const results = await Promise.all(Array.from({ length: 50 }, () => store.consumeInteraction(interaction.id, NOW)));
        assert.equal(results.filter((r) => r !== undefined).length, 1);
      });
    });

    describe('sessions', () => {
      it('round-trips and hides expired sessions', async () => {
        const user = await addUser(store);
        const session = makeSession(user.id, { expiresAt: NOW + 10 });
        await store.createSession(session);
        assert.deepEqual(await store.getSession(session.idHash, NOW), session);
        assert.equal(await store.getSession(session.idHash, NOW + 10), undefined);
        assert.equal(await store.getSession('nope', NOW), undefined);
      });

      itNeeds('signOut', 'deletes one session, leaving the user\'s others', async () => {
        const user = await addUser(store);
        const session = makeSession(user.id);
        const other = makeSession(user.id);
        await store.createSession(session);
        await store.createSession(other);
        await store.deleteSession(session.idHash);
        await store.deleteSession(session.idHash);
        assert.equal(await store.getSession(session.idHash, NOW), undefined);
        assert.ok(await store.getSession(other.idHash, NOW));
      });

      it('refuses a session for an unknown user', async () => {
        await assert.rejects(store.createSession(makeSession('no-such-user')));
      });
    });

    describe('consents', () => {
      it('saves and reads a consent', async () => {
        const { client, user } = await seed();
        assert.equal(await store.getConsent(user.id, client.clientId, 'https://mcp.example/'), undefined);
        const consent = makeConsent(user.id, client.clientId, { scope: ['read', 'admin'] });
        await store.saveConsent(consent);
        assert.deepEqual(await store.getConsent(user.id, client.clientId, consent.resource), { ...consent, scope: ['admin', 'read'] });
      });

      it('widens a consent to the union of scopes, sorted and de-duplicated, keeping createdAt', async () => {
        const { client, user } = await seed();
        await store.saveConsent(makeConsent(user.id, client.clientId, { scope: ['write', 'read'] }));
        await store.saveConsent(makeConsent(user.id, client.clientId, { scope: ['admin', 'read', 'read'], createdAt: NOW + 50, updatedAt: NOW + 50 }));
        const consent = await store.getConsent(user.id, client.clientId, 'https://mcp.example/');
        assert.deepEqual(consent?.scope, ['admin', 'read', 'write']);
        assert.equal(consent?.createdAt, NOW);
        assert.equal(consent?.updatedAt, NOW + 50);
      });

      it('keeps consents for different resources apart', async () => {
        const { client, user } = await seed();
        await store.saveConsent(makeConsent(user.id, client.clientId, { resource: 'https://a.example/', scope: ['a'] }));
        await store.saveConsent(makeConsent(user.id, client.clientId, { resource: 'https://b.example/', scope: ['b'] }));
        assert.deepEqual((await store.getConsent(user.id, client.clientId, 'https://a.example/'))?.scope, ['a']);
        assert.deepEqual((await store.getConsent(user.id, client.clientId, 'https://b.example/'))?.scope, ['b']);
      });

      itNeeds('administration', 'lists consents by user, by client, by both or all', async () => {
        const { client, user } = await seed();
        const otherClient = makeClient();
        const otherUser = makeUser();
        await store.createClient(otherClient);
        await store.createUser(otherUser);
        const pairs: Array<[string, string]> = [
          [user.id, client.clientId],
          [user.id, otherClient.clientId],
          [otherUser.id, client.clientId],
        ];
        for (const [userId, clientId] of pairs) await store.saveConsent(makeConsent(userId, clientId));

        const key = (c: ConsentRecord) => `${c.userId}|${c.clientId}`;
        const keys = async (filter: { userId?: string; clientId?: string }) => (await store.listConsents(filter)).map(key).sort();
        assert.deepEqual(await keys({}), pairs.map(([u, c]) => `${u}|${c}`).sort());
        assert.deepEqual(await keys({ userId: user.id }), [`${user.id}|${client.clientId}`, `${user.id}|${otherClient.clientId}`].sort());
        assert.deepEqual(await keys({ clientId: client.clientId }), [`${user.id}|${client.clientId}`, `${otherUser.id}|${client.clientId}`].sort());
        assert.deepEqual(await keys({ userId: otherUser.id, clientId: otherClient.clientId }), []);
      });

      itNeeds('administration', 'revokeConsents deletes the consents and revokes the grants of that user and client only', async () => {
        const { client, user, grant } = await seed();
        const alreadyRevoked = makeGrant(client.clientId, user.id, { revokedAt: NOW - 5 });
        const otherClient = makeClient();
        await store.createClient(otherClient);
        const otherGrant = makeGrant(otherClient.clientId, user.id);
        await store.createGrant(alreadyRevoked);
        await store.createGrant(otherGrant);
        await store.saveConsent(makeConsent(user.id, client.clientId, { resource: 'https://a.example/' }));
        await store.saveConsent(makeConsent(user.id, client.clientId, { resource: 'https://b.example/' }));
        await store.saveConsent(makeConsent(user.id, otherClient.clientId));

        assert.equal(await store.revokeConsents(user.id, client.clientId, NOW + 1), 2);

        assert.deepEqual(await store.listConsents({ userId: user.id, clientId: client.clientId }), []);
        assert.equal((await store.getGrant(grant.id))?.revokedAt, NOW + 1);
        assert.equal((await store.getGrant(alreadyRevoked.id))?.revokedAt, NOW - 5);
        assert.equal((await store.getGrant(otherGrant.id))?.revokedAt, null);
        assert.equal((await store.listConsents({ userId: user.id })).length, 1);
        assert.equal(await store.revokeConsents(user.id, client.clientId, NOW + 2), 0);
      });

      it('refuses a consent for an unknown user or client', async () => {
        const { client, user } = await seed();
        await assert.rejects(store.saveConsent(makeConsent('no-such-user', client.clientId)));
        await assert.rejects(store.saveConsent(makeConsent(user.id, 'no-such-client')));
      });
    });

    describe('grants', () => {
      it('round-trips a user grant and a client_credentials grant', async () => {
        const { client, grant } = await seed();
        assert.deepEqual(await store.getGrant(grant.id), grant);
        const machine = makeGrant(client.clientId, null, { scope: [] });
        await store.createGrant(machine);
        assert.deepEqual(await store.getGrant(machine.id), machine);
        assert.equal(await store.getGrant('nope'), undefined);
      });

      it('revokes once: the first revocation time stays', async () => {
        const { grant } = await seed();
        await store.revokeGrant(grant.id, NOW + 1);
        await store.revokeGrant(grant.id, NOW + 2);
        assert.equal((await store.getGrant(grant.id))?.revokedAt, NOW + 1);
        await store.revokeGrant('nope', NOW);
      });

      it('refuses a grant for an unknown client or user', async () => {
        const { client, user } = await seed();
        await assert.rejects(store.createGrant(makeGrant('no-such-client', user.id)));
        await assert.rejects(store.createGrant(makeGrant(client.clientId, 'no-such-user')));
      });

      it('refuses a duplicate grant id', async () => {
        const { grant } = await seed();
        await assert.rejects(store.createGrant(grant), StoreConflictError);
      });

      it('creates a grant with its code in one step, or neither when the code is refused', async () => {
        const { client, user } = await seed();
        const grant = makeGrant(client.clientId, user.id);
        const code = makeCode(grant);
        await store.createGrant(grant, code);
        assert.equal((await store.getGrant(grant.id))?.id, grant.id);
        assert.equal((await consume(code.codeHash, NOW)).status, 'ok');

        // The same code hash again, for a new grant: the conflict leaves no grant behind.
        const orphan = makeGrant(client.clientId, user.id);
        await assert.rejects(store.createGrant(orphan, { ...code, grantId: orphan.id }), StoreConflictError);
        assert.equal(await store.getGrant(orphan.id), undefined);
        // A code naming a grant that does not exist is refused, and the grant with it.
        const stray = makeGrant(client.clientId, user.id);
        await assert.rejects(store.createGrant(stray, makeCode({ ...stray, id: 'no-such-grant' })));
        assert.equal(await store.getGrant(stray.id), undefined);
      });
    });

    describe('authorization codes', () => {
      /** A grant saved with a code (`overrides`), the code unused. */
      async function withCode(overrides: Partial<AuthorizationCodeRecord> = {}) {
        const { client, user } = await parties();
        const grant = makeGrant(client.clientId, user.id);
        const code = makeCode(grant, overrides);
        await store.createGrant(grant, code);
        return { grant, code };
      }

      it('is consumed once, then reported as replayed', async () => {
        const { code } = await withCode();
        const first = expectRecord(await consume(code.codeHash, NOW + 1), 'ok');
        assert.deepEqual(first, { ...code, consumedAt: NOW + 1 });
        const second = expectRecord(await consume(code.codeHash, NOW + 2), 'replayed');
        assert.equal(second.consumedAt, NOW + 1);
      });

      it('is expired at and after expiresAt, and stays unused', async () => {
        const { code } = await withCode({ expiresAt: NOW + 60 });
        assert.deepEqual(expectRecord(await consume(code.codeHash, NOW + 60), 'expired'), code);
        assert.equal((await consume(code.codeHash, NOW + 600)).status, 'expired');
      });

      it('a used code stays a replay after it expires', async () => {
        const { code } = await withCode({ expiresAt: NOW + 60 });
        expectRecord(await consume(code.codeHash, NOW), 'ok');
        expectRecord(await consume(code.codeHash, NOW + 120), 'replayed');
      });

      it('is missing when unknown', async () => {
        assert.deepEqual(await consume('nope', NOW), { status: 'missing' });
      });

      it('is not consumed once its grant is revoked, and says so', async () => {
        const { grant, code } = await withCode();
        await store.revokeGrant(grant.id, NOW);
        assert.deepEqual(expectRecord(await consume(code.codeHash, NOW + 1), 'revoked'), code);
        // Still unused: the refusal did not spend it.
        assert.equal((await consume(code.codeHash, NOW + 2)).status, 'revoked');
      });

      it('redeems a code with its tokens in one step; a refusal still uses the code, a throw uses nothing', async () => {
        const { code: refused } = await withCode();
        assert.equal((await store.redeemAuthorizationCode(refused.codeHash, NOW, () => undefined)).status, 'ok');
        assert.equal((await consume(refused.codeHash, NOW)).status, 'replayed');

        const { grant, code: thrown } = await withCode();
        await assert.rejects(store.redeemAuthorizationCode(thrown.codeHash, NOW, () => { throw new Error('no'); }), /no/);
        const accepted = makeRefreshToken(grant);
        const result = await store.redeemAuthorizationCode(thrown.codeHash, NOW, (record) => {
          assert.equal(record.codeHash, thrown.codeHash);
          return { accessExpiresAt: NOW + 600, refreshToken: accepted };
        });
        assert.equal(result.status, 'ok');
        assert.deepEqual(await store.getRefreshToken(accepted.tokenHash), accepted);
        assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, NOW + 600);
      });

      it('a redemption whose refresh token is taken issues nothing and leaves the code unused', async () => {
        const { token: taken } = await family();
        const { grant, code } = await withCode();
        await assert.rejects(store.redeemAuthorizationCode(code.codeHash, NOW, () => ({ accessExpiresAt: NOW + 600, refreshToken: { ...taken, grantId: grant.id } })), StoreConflictError);
        assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, null);
        assert.equal((await consume(code.codeHash, NOW)).status, 'ok');
      });

      it('50 concurrent consumers: exactly one gets it', async () => {
        const { code } = await withCode();
        const results = await Promise.all(Array.from({ length: 50 }, () => consume(code.codeHash, NOW)));
        assert.equal(results.filter((r) => r.status === 'ok').length, 1);
        assert.equal(results.filter((r) => r.status === 'replayed').length, 49);
      });
    });

    describe('device authorizations', () => {
      /** A pending device authorization of a new client, and the grant and code (without its hash) its approval would create. */
      async function pendingDevice(overrides: Parameters<typeof makeDeviceAuthorization>[1] = {}) {
        const { client, user } = await parties();
        const device = makeDeviceAuthorization(client.clientId, overrides);
        await store.createDeviceAuthorization(device);
        const grant = makeGrant(client.clientId, user.id, { scope: device.scope, resource: device.resource });
        const { codeHash: _hash, expiresAt: _expiry, ...code } = makeCode(grant, { redirectUri: '', redirectUriProvided: false, codeChallenge: '' });
        return { client, user, device, grant, code };
      }

      itNeeds('deviceAuthorization', 'is found by its user code while pending and unexpired, and the user code is unique', async () => {
        const { client, device } = await pendingDevice({ expiresAt: NOW + 600 });
        assert.deepEqual(await store.findPendingDeviceAuthorization(device.userCodeHash, NOW + 599), device);
        assert.equal(await store.findPendingDeviceAuthorization(device.userCodeHash, NOW + 600), undefined);
        assert.equal(await store.findPendingDeviceAuthorization('nope', NOW), undefined);
        await assert.rejects(store.createDeviceAuthorization(makeDeviceAuthorization(client.clientId, { userCodeHash: device.userCodeHash })), StoreConflictError);
        await assert.rejects(store.createDeviceAuthorization(makeDeviceAuthorization(client.clientId, { deviceCodeHash: device.deviceCodeHash })), StoreConflictError);
      });

      itNeeds('deviceAuthorization', 'approval creates the grant and a code under the device code hash, redeemed once like any code', async () => {
        const { device, grant, code } = await pendingDevice();
        assert.equal(await store.approveDeviceAuthorization(device.deviceCodeHash, NOW + 1, grant, code), true);
        assert.equal(await store.findPendingDeviceAuthorization(device.userCodeHash, NOW + 1), undefined, 'no longer pending');
        assert.deepEqual(await store.getGrant(grant.id), grant);
        const redeemed = expectRecord(await consume(device.deviceCodeHash, NOW + 2), 'ok');
        assert.equal(redeemed.grantId, grant.id);
        assert.equal(redeemed.expiresAt, device.expiresAt, 'the code expires with the device authorization');
        expectRecord(await consume(device.deviceCodeHash, NOW + 3), 'replayed');
        assert.equal(await store.approveDeviceAuthorization(device.deviceCodeHash, NOW + 4, makeGrant(grant.clientId, grant.userId), code), false, 'decided already');
        assert.equal(await store.denyDeviceAuthorization(device.deviceCodeHash, NOW + 4), false);
      });

      itNeeds('deviceAuthorization', 'a denied or expired authorization is never approved, and approval writes nothing then', async () => {
        const denied = await pendingDevice();
        assert.equal(await store.denyDeviceAuthorization(denied.device.deviceCodeHash, NOW), true);
        assert.equal(await store.approveDeviceAuthorization(denied.device.deviceCodeHash, NOW, denied.grant, denied.code), false);
        assert.equal(await store.getGrant(denied.grant.id), undefined);
        assert.equal((await store.pollDeviceAuthorization(denied.device.deviceCodeHash, denied.client.clientId, NOW + 10)).status, 'denied');
        const expired = await pendingDevice({ expiresAt: NOW + 60 });
        assert.equal(await store.approveDeviceAuthorization(expired.device.deviceCodeHash, NOW + 60, expired.grant, expired.code), false);
        assert.equal(await store.denyDeviceAuthorization(expired.device.deviceCodeHash, NOW + 60), false);
        assert.equal(await store.getGrant(expired.grant.id), undefined);
        assert.equal((await store.pollDeviceAuthorization(expired.device.deviceCodeHash, expired.client.clientId, NOW + 60)).status, 'expired');
      });

      itNeeds('deviceAuthorization', 'a failed approval (its grant id taken) leaves the authorization pending', async () => {
        const { device, grant, code } = await pendingDevice();
        await store.createGrant(grant);
        await assert.rejects(store.approveDeviceAuthorization(device.deviceCodeHash, NOW, grant, code), StoreConflictError);
        assert.ok(await store.findPendingDeviceAuthorization(device.userCodeHash, NOW));
        assert.equal((await consume(device.deviceCodeHash, NOW)).status, 'missing');
      });

      itNeeds('deviceAuthorization', 'a poll sooner than the interval is slow_down and adds 5 s to the interval, for later polls too', async () => {
        const { client, device } = await pendingDevice({ interval: 5 });
        const poll = (now: number) => store.pollDeviceAuthorization(device.deviceCodeHash, client.clientId, now);
        const first = await poll(NOW);
        assert.equal(first.status, 'pending');
        assert.equal('record' in first && first.record.lastPolledAt, NOW);
        assert.equal((await poll(NOW + 5)).status, 'pending', 'exactly the interval later');
        const slow = await poll(NOW + 9);
        assert.equal(slow.status, 'slow_down');
        assert.equal('record' in slow && slow.record.interval, 10);
        assert.equal((await poll(NOW + 18)).status, 'slow_down', '9 s after the last poll: the interval is 10 s now');
        assert.equal((await poll(NOW + 33)).status, 'pending', '15 s later, the interval having grown to 15 s');
      });

      itNeeds('deviceAuthorization', 'another client polling is told nothing and changes nothing; an unknown code is missing', async () => {
        const { client, device } = await pendingDevice();
        const { client: other } = await parties();
        assert.equal((await store.pollDeviceAuthorization(device.deviceCodeHash, other.clientId, NOW)).status, 'foreign');
        assert.equal((await store.pollDeviceAuthorization(device.deviceCodeHash, client.clientId, NOW + 1)).status, 'pending', 'the foreign poll was not recorded');
        assert.deepEqual(await store.pollDeviceAuthorization('nope', client.clientId, NOW), { status: 'missing' });
      });

      itNeeds('deviceAuthorization', 'after approval a poll says approved', async () => {
        const { client, device, grant, code } = await pendingDevice();
        await store.approveDeviceAuthorization(device.deviceCodeHash, NOW, grant, code);
        assert.equal((await store.pollDeviceAuthorization(device.deviceCodeHash, client.clientId, NOW + 1)).status, 'approved');
      });

      itNeeds('deviceAuthorization', '20 concurrent decisions: exactly one is taken, and one grant exists', async () => {
        const { device, grant, code } = await pendingDevice();
        const grants = Array.from({ length: 20 }, (_, i) => ({ ...grant, id: `${grant.id}-${i}` }));
        const results = await Promise.all(
          grants.map((g, i) =>
            i % 2 === 0
              ? store.approveDeviceAuthorization(device.deviceCodeHash, NOW, g, { ...code, grantId: g.id })
              : store.denyDeviceAuthorization(device.deviceCodeHash, NOW),
          ),
        );
        assert.equal(results.filter(Boolean).length, 1);
        const stored = await Promise.all(grants.map((g) => store.getGrant(g.id)));
        assert.ok(stored.filter(Boolean).length <= 1);
      });

      itNeeds('deviceAuthorization', '20 concurrent polls at the same second: exactly one is pending, the rest slow_down', async () => {
        const { client, device } = await pendingDevice({ interval: 5, lastPolledAt: NOW - 60 });
        const results = await Promise.all(Array.from({ length: 20 }, () => store.pollDeviceAuthorization(device.deviceCodeHash, client.clientId, NOW)));
        assert.equal(results.filter((r) => r.status === 'pending').length, 1);
        assert.equal(results.filter((r) => r.status === 'slow_down').length, 19);
        const last = await store.pollDeviceAuthorization(device.deviceCodeHash, client.clientId, NOW);
        assert.equal('record' in last && last.record.interval, 5 + 5 * 20);
      });

      itNeeds(['deviceAuthorization', 'administration'], 'goes with its client', async () => {
        const { client, device } = await pendingDevice();
        await (store as FullStore).deleteClient(client.clientId, NOW);
        assert.deepEqual(await store.pollDeviceAuthorization(device.deviceCodeHash, client.clientId, NOW), { status: 'missing' });
      });

      itNeeds(['deviceAuthorization', 'upkeep'], 'the sweep removes expired authorizations, and the code an approval made once it expires', async () => {
        const gone = await pendingDevice({ expiresAt: NOW + 60 });
        await store.approveDeviceAuthorization(gone.device.deviceCodeHash, NOW, gone.grant, gone.code);
        const live = await pendingDevice({ expiresAt: NOW + 61 });
        await (store as FullStore).sweepExpired(NOW + 60);
        assert.deepEqual(await store.pollDeviceAuthorization(gone.device.deviceCodeHash, gone.client.clientId, NOW + 60), { status: 'missing' });
        assert.equal((await consume(gone.device.deviceCodeHash, NOW)).status, 'missing');
        assert.ok(await store.findPendingDeviceAuthorization(live.device.userCodeHash, NOW + 60));
      });
    });

    describe('refresh tokens', () => {
      it('round-trips', async () => {
        const { token } = await family();
        assert.deepEqual(await store.getRefreshToken(token.tokenHash), token);
        assert.equal(await store.getRefreshToken('nope'), undefined);
      });

      it('rotates: the old one is gone, a spent record of it is kept, the new one is stored', async () => {
        const { grant, token: old } = await family();
        const next = makeRefreshToken(grant, { createdAt: NOW + 5 });
        assert.equal(await store.findSpentRefreshToken(old.tokenHash), undefined, 'not spent before its rotation');
        assert.deepEqual(expectRecord(await rotate(old.tokenHash, next, NOW + 5), 'ok'), old);
        assert.equal(await store.getRefreshToken(old.tokenHash), undefined);
        assert.deepEqual(await store.findSpentRefreshToken(old.tokenHash), {
          grantId: grant.id, clientId: grant.clientId, spentAt: NOW + 5, expiresAt: old.expiresAt, successorUnused: true,
        });
        assert.deepEqual(await store.getRefreshToken(next.tokenHash), next);
        assert.equal(await store.findSpentRefreshToken(next.tokenHash), undefined);
        expectRecord(await rotate(next.tokenHash, makeRefreshToken(grant), NOW + 6), 'ok');
        assert.equal((await store.findSpentRefreshToken(old.tokenHash))?.successorUnused, false, 'once its successor is used');
      });

      it('a reused token is a replay, told by its spent record, and its replacement is not saved', async () => {
        const { grant, token: old } = await family();
        expectRecord(await rotate(old.tokenHash, makeRefreshToken(grant), NOW), 'ok');
        const stolen = makeRefreshToken(grant);
        const replayed = expectRecord(await rotate(old.tokenHash, stolen, NOW + 1), 'replayed');
        assert.deepEqual(replayed, { grantId: grant.id, clientId: grant.clientId, spentAt: NOW, expiresAt: old.expiresAt, successorUnused: true });
        assert.equal(await store.getRefreshToken(stolen.tokenHash), undefined);
        assert.equal((await store.findSpentRefreshToken(old.tokenHash))?.spentAt, NOW, 'a replay does not move the time it was spent');
      });

      it(`a spent record is found by its token’s hash (its first ${SPENT_KEY_CHARS} characters, 132 bits), never by another token’s`, async () => {
        const { grant, token: old } = await family();
        expectRecord(await rotate(old.tokenHash, makeRefreshToken(grant), NOW), 'ok');
        const key = old.tokenHash.slice(0, SPENT_KEY_CHARS);
        const flip = (c: string): string => (c === 'A' ? 'B' : 'A');
        assert.ok(await store.findSpentRefreshToken(`${key}${'x'.repeat(old.tokenHash.length - SPENT_KEY_CHARS)}`), 'the key is the prefix');
        assert.equal(await store.findSpentRefreshToken(`${key.slice(0, -1)}${flip(key.at(-1)!)}${old.tokenHash.slice(SPENT_KEY_CHARS)}`), undefined);
        assert.equal(await store.findSpentRefreshToken(hashSecret('another token')), undefined);
      });

      it('two spent tokens whose hashes share the key: the rotation still succeeds, the first record stays', async () => {
        const prefix = hashSecret('shared').slice(0, SPENT_KEY_CHARS);
        const { client, user, grant } = await family({}, { tokenHash: `${prefix}${'a'.repeat(21)}` });
        const { grant: otherGrant, token: second } = await familyOf(client, user, {}, { tokenHash: `${prefix}${'b'.repeat(21)}` });
        expectRecord(await rotate(`${prefix}${'a'.repeat(21)}`, makeRefreshToken(grant), NOW), 'ok');
        const next = makeRefreshToken(otherGrant);
        expectRecord(await rotate(second.tokenHash, next, NOW + 1), 'ok');
        assert.deepEqual(await store.getRefreshToken(next.tokenHash), next);
        assert.equal((await store.findSpentRefreshToken(second.tokenHash))?.grantId, grant.id, 'the first record is kept');
      });

      it('a live token comes before a spent record sharing its key', async () => {
        const prefix = hashSecret('shared').slice(0, SPENT_KEY_CHARS);
        const { grant, token: spent } = await family({}, { tokenHash: `${prefix}${'a'.repeat(21)}` });
        const live = makeRefreshToken(grant, { tokenHash: `${prefix}${'b'.repeat(21)}`, expiresAt: NOW + 10 });
        expectRecord(await rotate(spent.tokenHash, live, NOW), 'ok');
        assert.deepEqual(expectRecord(await rotate(live.tokenHash, makeRefreshToken(grant), NOW + 10), 'expired'), live);
        expectRecord(await rotate(live.tokenHash, makeRefreshToken(grant), NOW + 9), 'ok');
      });

      itNeeds('administration', 'a spent record is not found once its grant is gone', async () => {
        const { client, grant, token: old } = await family();
        expectRecord(await rotate(old.tokenHash, makeRefreshToken(grant), NOW), 'ok');
        await store.deleteClient(client.clientId);
        assert.equal(await store.findSpentRefreshToken(old.tokenHash), undefined);
        assert.deepEqual(await rotate(old.tokenHash, makeRefreshToken(grant), NOW), { status: 'missing' });
      });

      it('an expired token is not rotated', async () => {
        const { grant, token: old } = await family({}, { expiresAt: NOW + 10 });
        const next = makeRefreshToken(grant);
        assert.deepEqual(expectRecord(await rotate(old.tokenHash, next, NOW + 10), 'expired'), old);
        assert.equal(await store.getRefreshToken(next.tokenHash), undefined);
        assert.deepEqual(await store.getRefreshToken(old.tokenHash), old);
        assert.equal(await store.findSpentRefreshToken(old.tokenHash), undefined);
      });

      it('a token of a revoked grant is not rotated, nor spent', async () => {
        const { grant, token: old } = await family();
        const next = makeRefreshToken(grant);
        await store.revokeGrant(grant.id, NOW);
        assert.deepEqual(expectRecord(await rotate(old.tokenHash, next, NOW + 1), 'revoked'), old);
        assert.equal(await store.getRefreshToken(next.tokenHash), undefined);
        assert.deepEqual(await store.getRefreshToken(old.tokenHash), old);
        assert.equal(await store.findSpentRefreshToken(old.tokenHash), undefined);
      });

      it('an unknown token is missing and nothing is saved', async () => {
        const { grant } = await seed();
        const next = makeRefreshToken(grant);
        assert.deepEqual(await rotate('nope', next, NOW), { status: 'missing' });
        assert.equal(await store.getRefreshToken(next.tokenHash), undefined);
      });

      it('a failed insert of the replacement leaves the old token unused and unspent', async () => {
        const { client, user, grant, token: old } = await family();
        const { token: existing } = await familyOf(client, user);
        await assert.rejects(rotate(old.tokenHash, { ...existing, grantId: grant.id }, NOW), StoreConflictError);
        assert.deepEqual(await store.getRefreshToken(old.tokenHash), old);
        assert.equal(await store.findSpentRefreshToken(old.tokenHash), undefined);
      });

      it('concurrent rotations of one token naming the same new token (a server derives it from the token): one wins, the rest are replays, never a conflict', async () => {
        const { grant, token: old } = await family();
        const next = makeRefreshToken(grant);
        const results = await Promise.all(Array.from({ length: 20 }, () => rotate(old.tokenHash, next, NOW)));
        assert.deepEqual(results.map((r) => r.status).sort(), ['ok', ...Array(19).fill('replayed')]);
        assert.deepEqual(await store.getRefreshToken(next.tokenHash), next);
        assert.equal((await store.findSpentRefreshToken(old.tokenHash))?.successorUnused, true);
      });

      it('50 concurrent rotations: exactly one wins and exactly one new token is stored', async () => {
        const { grant, token: old } = await family();
        const nexts = Array.from({ length: 50 }, () => makeRefreshToken(grant));
        const results = await Promise.all(nexts.map((next) => rotate(old.tokenHash, next, NOW)));
        assert.equal(results.filter((r) => r.status === 'ok').length, 1);
        assert.equal(results.filter((r) => r.status === 'replayed').length, 49);
        const stored = await Promise.all(nexts.map((next) => store.getRefreshToken(next.tokenHash)));
        assert.equal(stored.filter((t) => t !== undefined).length, 1);
        const winner = results.findIndex((r) => r.status === 'ok');
        assert.deepEqual(stored[winner], nexts[winner]);
      });
    });

    describe('repeatRefresh', () => {
      /** The retry of the refresh that spent `oldHash`, naming `successor` (see repeatOf). */
      async function repeat(oldHash: string, successor: RefreshTokenRecord, now: number, spentAfter: number, overrides: Partial<RepeatRefreshRequest> = {}): Promise<RepeatRefreshResult> {
        return store.repeatRefresh(repeatOf(oldHash, successor, now, spentAfter, overrides));
      }

      /** The successor's hash an answered retry names. */
      function answered(result: RepeatRefreshResult): string {
        assert.equal(result.status, 'ok');
        return (result as Extract<RepeatRefreshResult, { status: 'ok' }>).successorHash;
      }

      /** The spent record a refused retry reports. */
      function replayed(result: RepeatRefreshResult): SpentRefreshTokenRecord {
        assert.equal(result.status, 'replayed');
        return (result as Extract<RepeatRefreshResult, { status: 'replayed' }>).record;
      }

      /** A token rotated at NOW to `successor`, its grant's only live token. */
      async function rotated(grantOverrides: Partial<GrantRecord> = {}) {
        const { client, user, grant, token: old } = await family(grantOverrides);
        const successor = makeRefreshToken(grant, { expiresAt: NOW + 50_000 });
        expectRecord(await rotate(old.tokenHash, successor, NOW), 'ok');
        return { client, user, grant: { ...grant, accessExpiresAt: NOW + 600 }, old, successor };
      }

      itNeeds('refreshRetry', 'answers with the successor the refresh issued, left live and unchanged, and raises the grant’s access expiry', async () => {
        const { grant, old, successor } = await rotated({ scope: ['read', 'write'] });
        const result = await repeat(old.tokenHash, successor, NOW + 10, NOW - 50, { accessExpiresAt: NOW + 610 });
        assert.deepEqual(result, { status: 'ok', grant: { ...grant, accessExpiresAt: NOW + 610 }, scope: successor.scope, successorHash: successor.tokenHash });
        assert.deepEqual(await store.getRefreshToken(successor.tokenHash), successor);
        assert.equal(await store.findSpentRefreshToken(successor.tokenHash), undefined);
        assert.deepEqual(await store.findSpentRefreshToken(old.tokenHash), {
          grantId: grant.id, clientId: grant.clientId, spentAt: NOW, expiresAt: old.expiresAt, successorUnused: true,
        }, 'the spent record stays as the refresh left it');
        assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, NOW + 610);
      });

      itNeeds('refreshRetry', 'as often as it is asked, concurrently too: the same successor every time, until the successor is used', async () => {
        const { grant, old, successor } = await rotated();
        for (const at of [NOW + 1, NOW + 2]) assert.equal(answered(await repeat(old.tokenHash, successor, at, NOW - 60)), successor.tokenHash);
        const results = await Promise.all(Array.from({ length: 20 }, () => repeat(old.tokenHash, successor, NOW + 3, NOW - 60)));
        assert.deepEqual(results.map(answered), Array(20).fill(successor.tokenHash));
        assert.deepEqual(await store.getRefreshToken(successor.tokenHash), successor);
        const third = makeRefreshToken(grant);
        expectRecord(await rotate(successor.tokenHash, third, NOW + 4), 'ok');
        replayed(await repeat(old.tokenHash, successor, NOW + 5, NOW - 60));
        assert.deepEqual(await store.getRefreshToken(third.tokenHash), third);
      });

      itNeeds('refreshRetry', 'confirms the successor by its full hash, among those asked for (one per key the server holds), never by its key alone', async () => {
        const { client, user, old, successor } = await rotated();
        const other = hashSecret('another token');
        assert.equal(answered(await repeat(old.tokenHash, successor, NOW + 1, NOW - 60, { successorHashes: [other, successor.tokenHash] })), successor.tokenHash);
        const sameKey = `${successor.tokenHash.slice(0, SPENT_KEY_CHARS)}${'x'.repeat(successor.tokenHash.length - SPENT_KEY_CHARS)}`;
        replayed(await repeat(old.tokenHash, successor, NOW + 1, NOW - 60, { successorHashes: [sameKey, other] }));
        replayed(await repeat(old.tokenHash, successor, NOW + 1, NOW - 60, { successorHashes: [] }));
        const { token: anotherFamilys } = await familyOf(client, user);
        replayed(await repeat(old.tokenHash, successor, NOW + 1, NOW - 60, { successorHashes: [anotherFamilys.tokenHash] }));
      });

      itNeeds('refreshRetry', 'not once the successor was used, nor with the token that followed it', async () => {
        const { grant, old, successor } = await rotated();
        const third = makeRefreshToken(grant);
        expectRecord(await rotate(successor.tokenHash, third, NOW + 1), 'ok');
        assert.deepEqual(replayed(await repeat(old.tokenHash, successor, NOW + 2, NOW - 60)), {
          grantId: grant.id, clientId: grant.clientId, spentAt: NOW, expiresAt: old.expiresAt, successorUnused: false,
        });
        replayed(await repeat(old.tokenHash, third, NOW + 2, NOW - 60));
        assert.equal(answered(await repeat(successor.tokenHash, third, NOW + 2, NOW - 60)), third.tokenHash, 'the successor\'s own retry');
      });

      itNeeds('refreshRetry', 'not for a token spent at or before spentAfter, nor one never spent or unknown', async () => {
        const { client, user, old, successor } = await rotated();
        replayed(await repeat(old.tokenHash, successor, NOW + 60, NOW));
        const { token: live } = await familyOf(client, user);
        assert.notEqual((await repeat(live.tokenHash, successor, NOW + 1, NOW - 60)).status, 'ok', 'a live token is not a retry');
        assert.ok(await store.getRefreshToken(live.tokenHash));
        assert.deepEqual(await repeat('nope', successor, NOW + 1, NOW - 60), { status: 'missing' });
        assert.deepEqual(await store.getRefreshToken(successor.tokenHash), successor);
      });

      itNeeds('refreshRetry', 'not for another client, a revoked grant, an expired successor or an unchecked upstream sign-in; a refusal writes nothing', async () => {
        const cases: { why: string; setUp: (family: Awaited<ReturnType<typeof rotated>>) => Promise<Partial<RepeatRefreshRequest>> }[] = [
          { why: 'another client', setUp: async () => ({ clientId: 'someone-else' }) },
          { why: 'a revoked grant', setUp: async ({ grant }) => (await store.revokeGrant(grant.id, NOW), {}) },
          { why: 'an expired successor', setUp: async () => ({ now: NOW + 50_000 }) },
        ];
        for (const { why, setUp } of cases) {
          const family = await rotated();
          const overrides = await setUp(family);
          assert.equal((await repeat(family.old.tokenHash, family.successor, NOW + 1, NOW - 60, { accessExpiresAt: NOW + 700, ...overrides })).status, 'replayed', why);
          assert.deepEqual(await store.getRefreshToken(family.successor.tokenHash), family.successor, why);
          assert.equal((await store.getGrant(family.grant.id))?.accessExpiresAt, NOW + 600, `${why}: the grant's expiry stays`);
        }
        const { user } = await seed();
        const session = makeUpstreamSession(user.id);
        await store.createUpstreamSession(session);
        const { old, successor } = await rotated({ upstreamSessionId: session.id });
        replayed(await repeat(old.tokenHash, successor, NOW + 1, NOW - 60, { upstreamChecked: false }));
        assert.equal(answered(await repeat(old.tokenHash, successor, NOW + 1, NOW - 60, { upstreamChecked: true })), successor.tokenHash);
      });

      itNeeds('refreshRetry', 'a retry racing the successor’s own rotation comes first (answered with the successor, which the rotation then spends) or after (refused): one live token', async () => {
        for (let round = 0; round < 10; round++) {
          const { grant, old, successor } = await rotated();
          const next = makeRefreshToken(grant);
          const retrying = () => repeat(old.tokenHash, successor, NOW + 1, NOW - 60);
          const rotating = () => store.refreshGrant(refreshOf(successor.tokenHash, next, NOW + 1));
          const [retried, rotation] = round % 2 === 0 ? await Promise.all([retrying(), rotating()]) : ((await Promise.all([rotating(), retrying()])).reverse() as [RepeatRefreshResult, RefreshResult]);
          assert.equal(rotation.status, 'ok', `round ${round}`);
          if (retried.status === 'ok') assert.equal(retried.successorHash, successor.tokenHash, `round ${round}`);
          else assert.equal(retried.status, 'replayed', `round ${round}`);
          assert.equal(await store.getRefreshToken(successor.tokenHash), undefined, `round ${round}`);
          assert.deepEqual(await store.getRefreshToken(next.tokenHash), next, `round ${round}: the rotation's token, the family's only live one`);
        }
      });
    });

    describe('refreshGrant', () => {
      it('returns the grant (its access expiry raised) and the spent token’s scope; the new token takes its grant, client and scope', async () => {
        const { grant, token: old } = await family({ scope: ['read', 'write'] }, { scope: ['read'] });
        const next = makeRefreshToken(grant, { createdAt: NOW + 5, expiresAt: NOW + 999 });
        const result = await store.refreshGrant(refreshOf(old.tokenHash, next, NOW + 5, { accessExpiresAt: NOW + 605 }));
        assert.deepEqual(result, { status: 'ok', grant: { ...grant, accessExpiresAt: NOW + 605 }, scope: ['read'] });
        assert.deepEqual(await store.getRefreshToken(next.tokenHash), { ...next, scope: ['read'] });
        assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, NOW + 605);
      });

      it('a redemption and each refresh raise the grant’s access expiry, never lower it', async () => {
        const { grant, token } = await family({}, {}, NOW + 600);
        assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, NOW + 600);
        const next = makeRefreshToken(grant);
        const result = await store.refreshGrant(refreshOf(token.tokenHash, next, NOW + 1, { accessExpiresAt: NOW + 300 }));
        assert.equal(result.status === 'ok' && result.grant.accessExpiresAt, NOW + 600);
        assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, NOW + 600);
      });

      it('another client’s token is foreign: left as it is, unspent', async () => {
        const { grant, token: old } = await family();
        const next = makeRefreshToken(grant);
        const result = await store.refreshGrant(refreshOf(old.tokenHash, next, NOW, { clientId: 'someone-else' }));
        assert.deepEqual(result, { status: 'foreign', record: old });
        assert.deepEqual(await store.getRefreshToken(old.tokenHash), old);
        assert.equal(await store.getRefreshToken(next.tokenHash), undefined);
        assert.equal(await store.findSpentRefreshToken(old.tokenHash), undefined);
        assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, 0, 'nothing issued: the expiry stays');
      });

      it('a grant resting on an upstream sign-in is held back, unspent, until the caller says it checked it', async () => {
        const { user } = await seed();
        const session = makeUpstreamSession(user.id);
        await store.createUpstreamSession(session);
        const { grant, token: old } = await family({ upstreamSessionId: session.id });
        const next = makeRefreshToken(grant);
        const held = await store.refreshGrant(refreshOf(old.tokenHash, next, NOW, { upstreamChecked: false }));
        assert.equal(held.status, 'upstream');
        assert.equal(held.status === 'upstream' && held.grant.upstreamSessionId, session.id);
        assert.deepEqual(await store.getRefreshToken(old.tokenHash), old);
        assert.equal(await store.findSpentRefreshToken(old.tokenHash), undefined);
        assert.equal((await store.refreshGrant(refreshOf(old.tokenHash, next, NOW, { upstreamChecked: true }))).status, 'ok');
      });

      it('an unchecked upstream grant that is revoked says revoked, not upstream', async () => {
        const { user } = await seed();
        const session = makeUpstreamSession(user.id);
        await store.createUpstreamSession(session);
        const { grant, token: old } = await family({ upstreamSessionId: session.id });
        await store.revokeGrant(grant.id, NOW);
        assert.equal((await store.refreshGrant(refreshOf(old.tokenHash, makeRefreshToken(grant), NOW, { upstreamChecked: false }))).status, 'revoked');
      });

      itNeeds('revocationFeed', 'a refresh racing a revocation: either it is refused, or the recorded revocation covers its access token', async () => {
        for (let round = 0; round < 10; round++) {
          const { grant, token: old } = await family();
          const refreshing = store.refreshGrant(refreshOf(old.tokenHash, makeRefreshToken(grant), NOW, { accessExpiresAt: NOW + 600 + round }));
          const revoking = round % 2 === 0 ? store.revokeGrant(grant.id, NOW) : Promise.resolve().then(() => store.revokeGrant(grant.id, NOW));
          const [result] = await Promise.all([refreshing, revoking]);
          const recorded = (await store.listRevocations(0, NOW)).find((r) => r.id === grant.id);
          if (result.status === 'ok') assert.equal(recorded?.expiresAt, NOW + 600 + round, 'the issued token is covered');
          else assert.equal(result.status, 'revoked');
        }
      });
    });

    describe('access tokens', () => {
      it('revokeAccessToken records the token while it is unexpired; isAccessTokenRevoked tells', async () => {
        assert.equal(await store.isAccessTokenRevoked('jti-1'), false);
        await store.revokeAccessToken('jti-1', NOW + 600, NOW + 1);
        await store.revokeAccessToken('jti-1', NOW + 600, NOW + 2);
        assert.equal(await store.isAccessTokenRevoked('jti-1'), true);
        await store.revokeAccessToken('jti-expired', NOW, NOW);
        assert.equal(await store.isAccessTokenRevoked('jti-expired'), false, 'an expired token needs no record');
      });
    });

    describe('used assertions', () => {
      it('useAssertionId is true the first time, false while the record is kept, true again once it expired', async () => {
        assert.equal(await store.useAssertionId('assertion-1', NOW + 60, NOW), true);
        assert.equal(await store.useAssertionId('assertion-1', NOW + 60, NOW + 30), false, 'a replay');
        assert.equal(await store.useAssertionId('assertion-2', NOW + 60, NOW), true, 'another assertion');
        assert.equal(await store.useAssertionId('assertion-1', NOW + 200, NOW + 60), true, 'a record expired at now counts as none');
        assert.equal(await store.useAssertionId('assertion-1', NOW + 200, NOW + 100), false, 'and the new record holds');
      });

      it('of many concurrent uses of one assertion, exactly one succeeds', async () => {
        const results = await Promise.all(Array.from({ length: 20 }, () => store.useAssertionId('raced', NOW + 60, NOW)));
        assert.equal(results.filter(Boolean).length, 1);
      });

      itNeeds('upkeep', 'the sweep removes expired records and keeps live ones', async () => {
        await store.useAssertionId('short', NOW + 10, NOW);
        await store.useAssertionId('long', NOW + 100, NOW);
        await store.sweepExpired(NOW + 50);
        assert.equal(await store.useAssertionId('long', NOW + 100, NOW + 20), false, 'still recorded');
        // Asked as of a time before it expired, only a removed record answers true.
        assert.equal(await store.useAssertionId('short', NOW + 100, NOW + 5), true, 'swept');
      });
    });

    describe('revocations', () => {
      itNeeds('revocationFeed', 'a revoked access token is listed once, at its first revocation', async () => {
        await store.revokeAccessToken('jti-1', NOW + 600, NOW + 1);
        await store.revokeAccessToken('jti-1', NOW + 600, NOW + 2);
        await store.revokeAccessToken('jti-expired', NOW, NOW);
        assert.deepEqual(await store.listRevocations(0, NOW), [{ kind: 'token', id: 'jti-1', revokedAt: NOW + 1, expiresAt: NOW + 600 }]);
      });

      itNeeds('revocationFeed', 'revokeGrant records the grant until the latest exp of its access tokens, once', async () => {
        const { grant, token } = await family({}, {}, NOW + 300);
        const second = makeRefreshToken(grant);
        expectRecord(await rotate(token.tokenHash, second, NOW, NOW + 600), 'ok');
        expectRecord(await rotate(second.tokenHash, makeRefreshToken(grant), NOW, NOW - 5), 'ok');
        assert.deepEqual(await store.listRevocations(0, NOW), []);
        await store.revokeGrant(grant.id, NOW + 1);
        await store.revokeGrant(grant.id, NOW + 2);
        assert.deepEqual(await store.listRevocations(0, NOW + 2), [{ kind: 'grant', id: grant.id, revokedAt: NOW + 1, expiresAt: NOW + 600 }]);
      });

      itNeeds('revocationFeed', 'records nothing for a grant whose access tokens have all expired, or that issued none (nothing left to refuse)', async () => {
        const { grant } = await family({}, {}, NOW);
        await store.revokeGrant(grant.id, NOW);
        const quiet = (await seed()).grant;
        await store.revokeGrant(quiet.id, NOW);
        assert.deepEqual(await store.listRevocations(0, NOW), []);
      });

      itNeeds('revocationFeed', 'lists from a cursor (revoked at or after it) and only what still affects an unexpired token', async () => {
        await store.revokeAccessToken('early', NOW + 100, NOW + 10);
        await store.revokeAccessToken('late', NOW + 900, NOW + 20);
        assert.deepEqual((await store.listRevocations(0, NOW + 20)).map((r) => [r.kind, r.id, r.revokedAt, r.expiresAt]), [
          ['token', 'early', NOW + 10, NOW + 100],
          ['token', 'late', NOW + 20, NOW + 900],
        ]);
        assert.deepEqual((await store.listRevocations(NOW + 11, NOW + 20)).map((r) => r.id), ['late']);
        assert.deepEqual((await store.listRevocations(0, NOW + 100)).map((r) => r.id), ['late']);
      });

      itNeeds(['administration', 'revocationFeed'], 'revokeConsents, deleteClient and deleteUser record the grants they end, with tokens still in hand', async () => {
        const { client, user, grant } = await family({}, {}, NOW + 500);
        await store.saveConsent(makeConsent(user.id, client.clientId));
        await store.revokeConsents(user.id, client.clientId, NOW + 1);
        const second = await family({}, {}, NOW + 500);
        await store.deleteClient(second.client.clientId, NOW + 2);
        const third = await family({}, {}, NOW + 500);
        await store.deleteUser(third.user.username, NOW + 3);
        assert.deepEqual((await store.listRevocations(0, NOW)).map((r) => [r.id, r.revokedAt]), [
          [grant.id, NOW + 1],
          [second.grant.id, NOW + 2],
          [third.grant.id, NOW + 3],
        ]);
      });

      itNeeds('revocationFeed', 'a redemption racing a revocation: either it is refused, or the recorded revocation covers its access token', async () => {
        const { client, user } = await parties();
        for (let round = 0; round < 10; round++) {
          const grant = makeGrant(client.clientId, user.id);
          const code = makeCode(grant);
          await store.createGrant(grant, code);
          const redeeming = store.redeemAuthorizationCode(code.codeHash, NOW, () => ({ accessExpiresAt: NOW + 600 + round, refreshToken: makeRefreshToken(grant) }));
          const revoking = round % 2 === 0 ? store.revokeGrant(grant.id, NOW) : Promise.resolve().then(() => store.revokeGrant(grant.id, NOW));
          const [result] = await Promise.all([redeeming, revoking]);
          const recorded = (await store.listRevocations(0, NOW)).find((r) => r.id === grant.id);
          if (result.status === 'ok') assert.equal(recorded?.expiresAt, NOW + 600 + round, 'the issued token is covered');
          else assert.equal(result.status, 'revoked');
        }
      });

      itNeeds(['revocationFeed', 'upkeep'], 'the sweep removes a revocation a minute after its last token expired', async () => {
        const { grant } = await family({}, {}, NOW + 100);
        await store.revokeGrant(grant.id, NOW);
        await store.sweepExpired(NOW + 159);
        assert.equal((await store.listRevocations(0, NOW)).length, 1);
        await store.sweepExpired(NOW + 160);
        assert.equal((await store.listRevocations(0, NOW)).length, 0);
      });
    });

    describe('signing keys', () => {
      it('starts empty', async () => {
        assert.deepEqual(await store.listSigningKeys(), []);
      });

      itNeeds('administration', 'rotates current → previous → retired, listing newest first', async () => {
        const k1 = makeSigningKey({ createdAt: NOW });
        const k2 = makeSigningKey({ createdAt: NOW + 10 });
        const k3 = makeSigningKey({ createdAt: NOW + 20, status: 'retired' });
        await store.rotateSigningKey(k1);
        assert.deepEqual(await store.listSigningKeys(), [k1]);
        await store.rotateSigningKey(k2);
        assert.deepEqual(await store.listSigningKeys(), [k2, { ...k1, status: 'previous' }]);
        await store.rotateSigningKey(k3);
        assert.deepEqual(await store.listSigningKeys(), [
          { ...k3, status: 'current' },
          { ...k2, status: 'previous' },
          { ...k1, status: 'retired' },
        ]);
        const k4 = makeSigningKey({ createdAt: NOW + 30 });
        await store.rotateSigningKey(k4);
        assert.deepEqual(
          (await store.listSigningKeys()).map((k) => [k.kid, k.status]),
          [[k4.kid, 'current'], [k3.kid, 'previous'], [k2.kid, 'retired'], [k1.kid, 'retired']],
        );
      });

      itNeeds('administration', 'orders keys created in the same second by rotation order', async () => {
        const k1 = makeSigningKey();
        const k2 = makeSigningKey();
        await store.rotateSigningKey(k1);
        await store.rotateSigningKey(k2);
        assert.deepEqual((await store.listSigningKeys()).map((k) => k.kid), [k2.kid, k1.kid]);
      });

      it('ensureSigningKey saves the first key only', async () => {
        const first = makeSigningKey();
        const second = makeSigningKey();
        assert.deepEqual(await store.ensureSigningKey(first), first);
        assert.deepEqual(await store.ensureSigningKey(second), first);
        assert.deepEqual(await store.listSigningKeys(), [first]);
      });

      itNeeds('administration', 'ensureSigningKey returns the current key after a rotation', async () => {
        await store.ensureSigningKey(makeSigningKey());
        const rotated = makeSigningKey({ createdAt: NOW + 1 });
        await store.rotateSigningKey(rotated);
        assert.deepEqual(await store.ensureSigningKey(makeSigningKey()), rotated);
        assert.equal((await store.listSigningKeys()).length, 2);
      });

      it('concurrent ensureSigningKey calls agree on one key', async () => {
        const keys = Array.from({ length: 20 }, () => makeSigningKey());
        const results = await Promise.all(keys.map((key) => store.ensureSigningKey(key)));
        assert.equal(new Set(results.map((k) => k.kid)).size, 1);
        assert.equal((await store.listSigningKeys()).length, 1);
      });
    });

    describe('shared rate-limit buckets', () => {
      const T = NOW * 1000;
      // Unique keys: a database may outlive one test.
      let bucket = { key: '', burst: 3, perSecond: 1 };
      beforeEach(() => {
        bucket = { ...bucket, key: `register:${uniqueId('bucket')}:${Math.random()}` };
      });

      itNeeds('rateBuckets', 'a new bucket starts full; grants what it holds, up to the want; refills with time, never past the burst', async () => {
        assert.deepEqual(await store.takeRateTokens({ ...bucket, want: 2, nowMs: T }), { granted: 2, level: 1 });
        assert.deepEqual(await store.takeRateTokens({ ...bucket, want: 2, nowMs: T }), { granted: 1, level: 0 });
        assert.deepEqual(await store.takeRateTokens({ ...bucket, want: 1, nowMs: T + 500 }), { granted: 0, level: 0.5 });
        assert.deepEqual(await store.takeRateTokens({ ...bucket, want: 1, nowMs: T + 1000 }), { granted: 1, level: 0 });
        // A clock behind the last writer's (another replica's) refills nothing and takes the bucket back in time to no one.
        assert.deepEqual(await store.takeRateTokens({ ...bucket, want: 1, nowMs: T }), { granted: 0, level: 0 });
        assert.deepEqual(await store.takeRateTokens({ ...bucket, want: 5, nowMs: T + 1_000_000 }), { granted: 3, level: 0 });
        // Other keys are other buckets.
        assert.deepEqual(await store.takeRateTokens({ ...bucket, key: `${bucket.key}-other`, want: 1, nowMs: T }), { granted: 1, level: 2 });
      });

      itNeeds('rateBuckets', 'concurrent takes never grant more than the bucket holds', async () => {
        const results = await Promise.all(Array.from({ length: 20 }, () => store.takeRateTokens({ ...bucket, burst: 7, want: 1, nowMs: T })));
        assert.equal(results.reduce((sum, r) => sum + r.granted, 0), 7);
      });

      itNeeds(['rateBuckets', 'upkeep'], 'a bucket full again is swept; one still refilling is kept', async () => {
        await store.sweepExpired(NOW + 1_000_000);
        await store.takeRateTokens({ ...bucket, want: 3, nowMs: T });
        assert.equal(await store.sweepExpired(NOW + 2), 0);
        assert.equal(await store.sweepExpired(NOW + 3), 1);
        // Swept means full: the next take sees a new bucket, as it would have seen a refilled one.
        assert.deepEqual(await store.takeRateTokens({ ...bucket, want: 3, nowMs: T + 3000 }), { granted: 3, level: 0 });
      });
    });

    describe('admin console', () => {
      itNeeds('console', 'pages through clients in client_id order, and narrows them by ID or name in any case', async () => {
        const names = ['c-05', 'c-01', 'c-03', 'c-02', 'c-04'];
        for (const id of names) await store.createClient(makeClient({ clientId: id, clientName: id === 'c-04' ? 'The Weather App' : null }));
        const first = await store.listClientsPage({ limit: 2 });
        assert.deepEqual(first.map((c) => c.clientId), ['c-01', 'c-02']);
        const second = await store.listClientsPage({ limit: 2, after: 'c-02' });
        assert.deepEqual(second.map((c) => c.clientId), ['c-03', 'c-04']);
        assert.deepEqual((await store.listClientsPage({ limit: 2, after: 'c-04' })).map((c) => c.clientId), ['c-05']);
        assert.deepEqual((await store.listClientsPage({ limit: 10, search: 'WEATHER' })).map((c) => c.clientId), ['c-04']);
        assert.deepEqual((await store.listClientsPage({ limit: 10, search: '-03' })).map((c) => c.clientId), ['c-03']);
        assert.deepEqual(await store.listClientsPage({ limit: 10, search: '%' }), [], 'a wildcard in the search is a plain character');
        assert.deepEqual(await store.listClientsPage({ limit: 10, search: '_' }), []);
        assert.deepEqual(first[0], await store.getClient('c-01'));
      });

      itNeeds('console', 'pages through users by username, narrowed by a search', async () => {
        for (const username of ['dora', 'alice', 'carol', 'bob']) await store.createUser(makeUser({ username }));
        assert.deepEqual((await store.listUsersPage({ limit: 3 })).map((u) => u.username), ['alice', 'bob', 'carol']);
        assert.deepEqual((await store.listUsersPage({ limit: 3, after: 'carol' })).map((u) => u.username), ['dora']);
        assert.deepEqual((await store.listUsersPage({ limit: 3, search: 'AR' })).map((u) => u.username), ['carol']);
      });

      itNeeds('console', 'marks a user an administrator and back, and says when there is no such user', async () => {
        const user = await addUser(store, makeUser({ username: 'root-person' }));
        assert.equal((await store.getUser({ id: user.id }))?.admin ?? false, false);
        assert.equal(await store.setUserAdmin('root-person', true), true);
        assert.equal((await store.getUser({ id: user.id }))?.admin, true);
        assert.equal(await store.setUserAdmin('root-person', false), true);
        assert.equal((await store.getUser({ id: user.id }))?.admin, false);
        assert.equal(await store.setUserAdmin('nobody', true), false);
        assert.equal(await store.createUser(makeUser({ username: 'born-admin', admin: true })), undefined);
        assert.equal((await store.getUser({ username: 'born-admin' }))?.admin, true);
      });

      itNeeds('console', "a new session records the user's last sign-in", async () => {
        const user = await addUser(store);
        await store.createSession(makeSession(user.id, { createdAt: NOW + 5 }));
        assert.equal((await store.getUser({ id: user.id }))?.lastSignInAt, NOW + 5);
      });

      itNeeds('console', "ending a user's sessions ends all of theirs and their pending sign-ins, and no one else's", async () => {
        const { client, user } = await parties();
        const other = await addUser(store);
        const mine = [makeSession(user.id), makeSession(user.id)];
        const theirs = makeSession(other.id);
        for (const session of [...mine, theirs]) await store.createSession(session);
        const interaction = makeInteraction(client.clientId, { userId: user.id });
        await store.createInteraction(interaction);
        assert.equal(await store.endUserSessions(user.id), 2);
        for (const session of mine) assert.equal(await store.getSession(session.idHash, NOW), undefined);
        assert.equal(await store.getInteraction(interaction.id, NOW), undefined);
        assert.ok(await store.getSession(theirs.idHash, NOW));
        assert.equal(await store.endUserSessions(user.id), 0);
      });
    });

    describe('audit events', () => {
      const event = makeAuditEvent;

      itNeeds('auditEvents', 'keeps events with their fields and details, newest first, a page at a time', async () => {
        const recorded = [
          event({ event: 'login', userId: 'u1', address: '203.0.113.7', provider: 'corp', details: { method: 'upstream' } }),
          event({ event: 'login_failed', outcome: 'failure', reason: 'wrong password', occurredAt: NOW * 1000 + 1 }),
          event({ event: 'token_issued', clientId: 'c1', userId: 'u1', grantId: 'g1', occurredAt: NOW * 1000 + 2, details: { grant_type: 'authorization_code', dpop: true, n: 3 } }),
        ];
        await store.recordAuditEvents(recorded);
        const all = await store.listAuditEvents({ limit: 10 });
        assert.deepEqual(all.map(({ seq: _seq, ...rest }) => rest), [...recorded].reverse());
        assert.ok(all[0]!.seq! > all[1]!.seq! && all[1]!.seq! > all[2]!.seq!, 'seq increases as events are recorded');
        const page = await store.listAuditEvents({ limit: 2 });
        const next = await store.listAuditEvents({ limit: 2, beforeSeq: page[1]!.seq });
        assert.deepEqual([...page, ...next].map((e) => e.event), ['token_issued', 'login_failed', 'login']);
      });

      itNeeds('auditEvents', 'filters by event, outcome, user, client, address and time', async () => {
        await store.recordAuditEvents([
          event({ event: 'login', userId: 'u1', address: 'a1', occurredAt: 1000 }),
          event({ event: 'login_failed', outcome: 'failure', userId: 'u2', address: 'a2', occurredAt: 2000 }),
          event({ event: 'rate_limited', outcome: 'failure', clientId: 'c1', address: 'a2', occurredAt: 3000 }),
        ]);
        const names = async (query: Omit<AuditEventQuery, 'limit'>) => (await store.listAuditEvents({ limit: 10, ...query })).map((e) => e.event);
        assert.deepEqual(await names({ event: 'login' }), ['login']);
        assert.deepEqual(await names({ outcome: 'failure' }), ['rate_limited', 'login_failed']);
        assert.deepEqual(await names({ userId: 'u2' }), ['login_failed']);
        assert.deepEqual(await names({ clientId: 'c1' }), ['rate_limited']);
        assert.deepEqual(await names({ address: 'a2' }), ['rate_limited', 'login_failed']);
        assert.deepEqual(await names({ since: 2000 }), ['rate_limited', 'login_failed']);
        assert.deepEqual(await names({ address: 'a2', outcome: 'failure', since: 2500 }), ['rate_limited']);
      });

      itNeeds(['auditEvents', 'upkeep'], 'the sweep deletes events older than their retention only when asked, and keeps the rest', async () => {
        await store.recordAuditEvents([event({ event: 'login', occurredAt: 1000 }), event({ event: 'logout', occurredAt: 5000 })]);
        await store.sweepExpired(NOW);
        assert.equal((await store.listAuditEvents({ limit: 10 })).length, 2, 'kept without auditEventsBefore');
        assert.ok((await store.sweepExpired(NOW, { auditEventsBefore: 5000 })) >= 1);
        assert.deepEqual((await store.listAuditEvents({ limit: 10 })).map((e) => e.event), ['logout']);
      });

      itNeeds(['auditEvents', 'administration'], 'an event outlives the client and the user it names', async () => {
        const { client, user } = await parties();
        await store.recordAuditEvents([event({ clientId: client.clientId, userId: user.id })]);
        await store.deleteClient(client.clientId);
        await store.deleteUser(user.username);
        assert.equal((await store.listAuditEvents({ limit: 10, clientId: client.clientId })).length, 1);
      });
    });

    describe('sweepExpired', () => {
      /** `count` grants of one client and user, each with a refresh token (`tokenOverrides`) issued at NOW. */
      async function families(count: number, tokenOverrides: Partial<RefreshTokenRecord>) {
        const { client, user } = await parties();
        return inBatches(count, async () => (await familyOf(client, user, {}, tokenOverrides)).token);
      }

      itNeeds('upkeep', 'sweeps more rows than one batch holds, all of them', async () => {
        const bulk = await families(1200, { expiresAt: NOW - 1 });
        const [live] = await families(1, { expiresAt: NOW + 60 });
        assert.ok((await store.sweepExpired(NOW)) >= 1200);
        assert.equal(await store.getRefreshToken(bulk[0]!.tokenHash), undefined);
        assert.equal(await store.getRefreshToken(bulk[1199]!.tokenHash), undefined);
        assert.ok(await store.getRefreshToken(live!.tokenHash));
      });

      itNeeds('upkeep', 'an aborted sweep deletes nothing more, and the next sweep takes all that is left', async () => {
        const expired = await families(30, { expiresAt: NOW - 1 });
        const controller = new AbortController();
        controller.abort();
        assert.equal(await store.sweepExpired(NOW, { signal: controller.signal }), 0);
        assert.ok(await store.getRefreshToken(expired[0]!.tokenHash), 'still there after the aborted sweep');
        assert.ok((await store.sweepExpired(NOW)) >= 30);
        for (const token of expired) assert.equal(await store.getRefreshToken(token.tokenHash), undefined);
      });

      itNeeds('upkeep', 'a sweep rests through the pause it is given: held there, it goes on once the pause resolves', async () => {
        await families(1200, { expiresAt: NOW - 1 });
        let release!: () => void;
        const held = new Promise<void>((resolve) => (release = resolve));
        const asked: number[] = [];
        let finished = false;
        const pause = (ms: number) => {
          asked.push(ms);
          return held;
        };
        const sweep = store.sweepExpired(NOW, { pause }).then((rows) => ((finished = true), rows));
        await new Promise((resolve) => setTimeout(resolve, 200));
        if (options.batchedSweep) {
          assert.ok(asked.length > 0, 'paused after a batch');
          assert.equal(finished, false, 'held at the pause');
        }
        release();
        assert.ok((await sweep) >= 1200);
      });

      itNeeds('upkeep', 'finds expired tokens and spent records among more live ones than a slice of the walk holds, all of them', async () => {
        // Random hashes: the expired lie scattered between the live along the key.
        const { client, user } = await parties();
        const live = await inBatches(2500, async () => (await familyOf(client, user, {}, { expiresAt: NOW + 60 })).token);
        const expired = await inBatches(60, async () => familyOf(client, user, {}, { expiresAt: NOW - 1 }));
        const rotated = expired.slice(0, 20);
        for (const { grant, token } of rotated) expectRecord(await rotate(token.tokenHash, makeRefreshToken(grant, { expiresAt: NOW + 60 }), NOW - 100), 'ok');
        // The 20 rotated went to spent records (expired with their tokens); 40 expired tokens are
        // left. The codes redeemed at NOW, and the grants made then, are not yet due.
        assert.equal(await store.sweepExpired(NOW), 60);
        for (const { token } of expired) assert.equal(await store.getRefreshToken(token.tokenHash), undefined);
        for (const { token } of rotated) assert.equal(await store.findSpentRefreshToken(token.tokenHash), undefined);
        for (const token of live) assert.ok(await store.getRefreshToken(token.tokenHash));
      });

      itNeeds('upkeep', 'walks old grants in slices with rests between them, finding the empty ones among those still in use', async () => {
        const { client, user } = await seed();
        // 3,000 old grants kept by an access token still valid; one in forty of them empty and done
        // (fewer than a batch of deletions, so that only a walk rests among them).
        const grants = Array.from({ length: 3000 }, (_, i) =>
          makeGrant(client.clientId, user.id, { createdAt: NOW - 1000, accessExpiresAt: i % 40 === 3 ? NOW - 1 : NOW + 60 }),
        );
        await inBatches(grants.length, (i) => store.createGrant(grants[i]!));
        let rests = 0;
        assert.equal(await store.sweepExpired(NOW, { pause: async () => void rests++ }), 75);
        // One statement looking for empty grants among those in use read every one of them (1M:
        // 640 ms on SQLite's event loop). A sweep in one pass has no rests.
        if (options.batchedSweep) assert.ok(rests >= 2, `rests: ${rests}`);
        for (const [i, grant] of grants.entries()) assert.equal((await store.getGrant(grant.id)) === undefined, i % 40 === 3, `grant ${i}`);
      });

      itNeeds('upkeep', 'removes expired rows and orphaned old grants, keeps live ones, and counts', async () => {
        const { client, user } = await seed();
        const old = NOW - 1000;
        const deadGrant = makeGrant(client.clientId, user.id, { createdAt: old });
        const emptyOldGrant = makeGrant(client.clientId, user.id, { createdAt: old });
        const emptyNewGrant = makeGrant(client.clientId, user.id, { createdAt: NOW - 30 });
        const liveGrant = makeGrant(client.clientId, user.id, { createdAt: old });
        // Only an access token in hand (client_credentials): kept until it expires.
        const accessOnlyGrant = makeGrant(client.clientId, null, { createdAt: old, accessExpiresAt: NOW + 60 });
        const accessExpiredGrant = makeGrant(client.clientId, null, { createdAt: old, accessExpiresAt: NOW });
        for (const grant of [emptyOldGrant, emptyNewGrant, accessOnlyGrant, accessExpiredGrant]) await store.createGrant(grant);

        // Codes redeemed a little before NOW: the dead one expired at NOW, the live one a second later.
        const deadRefresh = makeRefreshToken(deadGrant, { expiresAt: NOW - 1 });
        const deadCode = await issueFirstToken(store, deadGrant, deadRefresh, { at: NOW - 10, code: { expiresAt: NOW } });
        const liveRefresh = makeRefreshToken(liveGrant);
        const liveCode = await issueFirstToken(store, liveGrant, liveRefresh, { at: NOW - 10, code: { expiresAt: NOW + 1 } });
        const deadSession = makeSession(user.id, { expiresAt: NOW });
        const deadInteraction = makeInteraction(client.clientId, { expiresAt: NOW - 1 });
        const liveSession = makeSession(user.id);
        const liveInteraction = makeInteraction(client.clientId);
        await store.createSession(deadSession);
        await store.createInteraction(deadInteraction);
        await store.createSession(liveSession);
        await store.createInteraction(liveInteraction);

        // 4 expired rows + the dead grant + the old empty grant + the one whose access token expired (the initial seed grant is new).
        assert.equal(await store.sweepExpired(NOW), 7);

        assert.equal((await consume(deadCode.codeHash, NOW - 10)).status, 'missing');
        assert.equal(await store.getRefreshToken(deadRefresh.tokenHash), undefined);
        assert.equal(await store.getGrant(accessExpiredGrant.id), undefined);
        assert.equal(await store.getSession(deadSession.idHash, NOW - 10), undefined);
        assert.equal(await store.getInteraction(deadInteraction.id, NOW - 10), undefined);
        assert.equal(await store.getGrant(deadGrant.id), undefined);
        assert.equal(await store.getGrant(emptyOldGrant.id), undefined);

        assert.ok(await store.getGrant(emptyNewGrant.id));
        assert.ok(await store.getGrant(liveGrant.id));
        assert.ok(await store.getRefreshToken(liveRefresh.tokenHash));
        assert.ok(await store.getGrant(accessOnlyGrant.id));
        assert.ok(await store.getSession(liveSession.idHash, NOW));
        assert.ok(await store.getInteraction(liveInteraction.id, NOW));
        expectRecord(await consume(liveCode.codeHash, NOW), 'replayed');

        assert.equal(await store.sweepExpired(NOW), 0);
      });

      itNeeds('upkeep', 'sweeps spent records when their token would have expired, and grants that only spent records remember', async () => {
        const { client, user } = await seed({ createdAt: NOW });
        const ended = makeGrant(client.clientId, user.id, { createdAt: NOW - 1000 });
        const going = makeGrant(client.clientId, user.id, { createdAt: NOW - 1000 });
        const endedToken = makeRefreshToken(ended, { expiresAt: NOW + 10 });
        const endedNext = makeRefreshToken(ended, { expiresAt: NOW + 10 });
        const goingToken = makeRefreshToken(going, { expiresAt: NOW + 100 });
        const goingNext = makeRefreshToken(going, { expiresAt: NOW + 200 });
        // Their codes, redeemed a minute before NOW, expire at NOW.
        await issueFirstToken(store, ended, endedToken, { at: NOW - 60 });
        await issueFirstToken(store, going, goingToken, { at: NOW - 60 });
        // Access tokens as short-lived as the ended family's refresh tokens: a grant goes only once they expired too.
        expectRecord(await rotate(endedToken.tokenHash, endedNext, NOW, NOW + 10), 'ok');
        expectRecord(await rotate(goingToken.tokenHash, goingNext, NOW, NOW + 10), 'ok');

        // Past the ended family's tokens, spent and live, and both codes: all go, then its grant.
        assert.equal(await store.sweepExpired(NOW + 10), 5);
        assert.equal(await store.findSpentRefreshToken(endedToken.tokenHash), undefined);
        assert.equal(await store.getGrant(ended.id), undefined);
        assert.ok(await store.findSpentRefreshToken(goingToken.tokenHash), 'a spent record is kept until its token would have expired');
        assert.equal((await rotate(goingToken.tokenHash, makeRefreshToken(going), NOW + 50)).status, 'replayed');

        // The spent record, and the seed's grant, empty and now old enough.
        assert.equal(await store.sweepExpired(NOW + 100), 2);
        assert.equal(await store.findSpentRefreshToken(goingToken.tokenHash), undefined);
        assert.ok(await store.getRefreshToken(goingNext.tokenHash));
      });

      itNeeds('upkeep', 'returns 0 on an empty store', async () => {
        assert.equal(await store.sweepExpired(NOW), 0);
      });
    });

    describe('upstream identities and sessions', () => {
      it('a user without a password, with their identity, found by provider, issuer and subject', async () => {
        const user = makeUser({ passwordHash: null });
        const identity = makeIdentity(user);
        await store.createUserWithIdentity(user, identity);
        assert.deepEqual(await store.getUser({ identity }), user);
        assert.deepEqual(await store.getUser({ id: user.id }), user);
        assert.equal(await store.getUser({ identity: { ...identity, subject: 'someone-else' } }), undefined);
        assert.equal(await store.getUser({ identity: { ...identity, issuer: 'https://other.example' } }), undefined);
        assert.equal(await store.getUser({ identity: { ...identity, provider: 'other' } }), undefined);
        assert.deepEqual(await store.listUserIdentities({ userId: user.id }), [identity]);
      });

      it('the same issuer and subject at two providers are two people', async () => {
        const first = makeUser({ passwordHash: null });
        const second = makeUser({ passwordHash: null });
        const identity = makeIdentity(first, { provider: 'hub', subject: '1001' });
        await store.createUserWithIdentity(first, identity);
        await store.createUserWithIdentity(second, { ...identity, provider: 'forge', userId: second.id });
        assert.equal((await store.getUser({ identity }))?.id, first.id);
        assert.equal((await store.getUser({ identity: { ...identity, provider: 'forge' } }))?.id, second.id);
      });

      it('a taken username or identity is a conflict, and nothing is half-written', async () => {
        const first = makeUser({ passwordHash: null });
        const identity = makeIdentity(first);
        await store.createUserWithIdentity(first, identity);
        const second = makeUser({ passwordHash: null });
        await assert.rejects(store.createUserWithIdentity(second, { ...identity, userId: second.id }), StoreConflictError);
        assert.equal(await store.getUser({ id: second.id }), undefined);
        await assert.rejects(store.createUserWithIdentity({ ...second, username: first.username }, makeIdentity(second)), StoreConflictError);
        assert.equal(await store.getUser({ id: second.id }), undefined);
        assert.equal((await store.listUserIdentities({ userId: second.id })).length, 0);
      });

      it('an interaction keeps the provider chosen', async () => {
        const client = makeClient();
        await store.createClient(client);
        const interaction = makeInteraction(client.clientId);
        await store.createInteraction(interaction);
        const upstream = { provider: 'corp', sealedPending: 'v1.k.n.b' };
        await store.updateInteraction(interaction.id, { upstream });
        assert.deepEqual((await store.getInteraction(interaction.id, NOW))?.upstream, upstream);
        assert.deepEqual((await store.consumeInteraction(interaction.id, NOW))?.upstream, upstream);
      });

      it('an upstream session, its tokens replaced; sessions and grants rest on it', async () => {
        const { client, user } = await seed();
        const upstream = makeUpstreamSession(user.id);
        await store.createUpstreamSession(upstream);
        assert.deepEqual(await store.getUpstreamSession(upstream.id), upstream);
        await store.updateUpstreamSessionTokens(upstream.id, 'v1.key.nonce.renewed');
        assert.equal((await store.getUpstreamSession(upstream.id))?.sealedTokens, 'v1.key.nonce.renewed');

        const session = makeSession(user.id, { upstreamSessionId: upstream.id });
        await store.createSession(session);
        assert.deepEqual(await store.getSession(session.idHash, NOW), session);
        const grant = makeGrant(client.clientId, user.id, { upstreamSessionId: upstream.id });
        await store.createGrant(grant);
        assert.deepEqual(await store.getGrant(grant.id), grant);
        await assert.rejects(store.createGrant(makeGrant(client.clientId, user.id, { upstreamSessionId: 'no-such-session' })));
      });

      itNeeds('administration', 'deleting the user deletes their identities and upstream sessions', async () => {
        const user = makeUser({ passwordHash: null });
        await store.createUserWithIdentity(user, makeIdentity(user));
        const upstream = makeUpstreamSession(user.id);
        await store.createUpstreamSession(upstream);
        assert.equal(await store.deleteUser(user.username), true);
        assert.equal(await store.getUpstreamSession(upstream.id), undefined);
        assert.deepEqual(await store.listUserIdentities({ userId: user.id }), []);
      });

      itNeeds('upkeep', 'sweeping removes an expired upstream session only once nothing rests on it', async () => {
        const { client, user } = await seed();
        const kept = makeUpstreamSession(user.id, { expiresAt: NOW - 1 });
        const gone = makeUpstreamSession(user.id, { expiresAt: NOW - 1 });
        await store.createUpstreamSession(kept);
        await store.createUpstreamSession(gone);
        await familyOf(client, user, { upstreamSessionId: kept.id });
        await store.sweepExpired(NOW);
        assert.ok(await store.getUpstreamSession(kept.id));
        assert.equal(await store.getUpstreamSession(gone.id), undefined);
      });
    });

    describe('copies', () => {
      it('mutating an input after saving it does not change the store', async () => {
        const client = makeClient();
        await store.createClient(client);
        client.redirectUris.push('https://evil.example/');
        client.metadata['injected'] = true;
        const stored = await store.getClient(client.clientId);
        assert.deepEqual(stored?.redirectUris, ['https://app.example/callback', 'http://127.0.0.1/callback']);
        assert.equal(stored?.metadata['injected'], undefined);
      });

      it('mutating a returned record does not change the store', async () => {
        const { client, user, grant } = await seed();
        const fetchedClient = await store.getClient(client.clientId);
        assert.ok(fetchedClient);
        fetchedClient.redirectUris.push('https://evil.example/');
        (fetchedClient.metadata['nested'] as { a: number[] }).a.push(3);
        assert.deepEqual(await store.getClient(client.clientId), client);

        const fetchedGrant = await store.getGrant(grant.id);
        assert.ok(fetchedGrant);
        fetchedGrant.scope.push('admin');
        fetchedGrant.revokedAt = NOW;
        assert.deepEqual(await store.getGrant(grant.id), grant);

        const fetchedUser = await store.getUser({ id: user.id });
        assert.ok(fetchedUser);
        fetchedUser.username = 'mallory';
        assert.deepEqual(await store.getUser({ username: user.username }), user);

        const interaction = makeInteraction(client.clientId);
        await store.createInteraction(interaction);
        const fetchedInteraction = await store.getInteraction(interaction.id, NOW);
        assert.ok(fetchedInteraction);
        fetchedInteraction.request.scope.push('admin');
        assert.deepEqual(await store.getInteraction(interaction.id, NOW), interaction);

        await store.saveConsent(makeConsent(user.id, client.clientId));
        (await store.getConsent(user.id, client.clientId, 'https://mcp.example/'))?.scope.push('admin');
        assert.deepEqual((await store.getConsent(user.id, client.clientId, 'https://mcp.example/'))?.scope, ['read']);
      });

      itNeeds('administration', 'mutating a listed record does not change the store', async () => {
        const { client, user } = await seed();
        const listed = await store.listClients();
        listed[0]?.grantTypes.push('client_credentials');
        assert.deepEqual(await store.getClient(client.clientId), client);
        await store.saveConsent(makeConsent(user.id, client.clientId));
        const consents = await store.listConsents({});
        consents[0]?.scope.push('admin');
        assert.deepEqual((await store.getConsent(user.id, client.clientId, 'https://mcp.example/'))?.scope, ['read']);
      });

      it('mutating a consume or rotate result does not change the store', async () => {
        const { client, user, grant, token, code: redeemed } = await family();
        const other = makeGrant(client.clientId, user.id);
        const code = makeCode(other);
        await store.createGrant(other, code);
        const used = expectRecord(await consume(code.codeHash, NOW), 'ok');
        used.consumedAt = null;
        used.scope.push('admin');
        expectRecord(await consume(code.codeHash, NOW), 'replayed');
        expectRecord(await consume(redeemed.codeHash, NOW), 'replayed');

        const next = makeRefreshToken(grant);
        expectRecord(await rotate(token.tokenHash, next, NOW), 'ok');
        (await store.getRefreshToken(next.tokenHash))!.scope.push('admin');
        assert.deepEqual((await store.getRefreshToken(next.tokenHash))?.scope, next.scope);
        (await store.findSpentRefreshToken(token.tokenHash))!.spentAt = 0;
        assert.equal((await store.findSpentRefreshToken(token.tokenHash))?.spentAt, NOW);
        if (capabilitiesOf(opened.store).includes('refreshRetry')) {
          const repeated = await store.repeatRefresh(repeatOf(token.tokenHash, next, NOW + 1, NOW - 60));
          assert.equal(repeated.status, 'ok');
          if (repeated.status === 'ok') repeated.scope.push('admin');
          if (repeated.status === 'ok') repeated.grant.scope.push('admin');
          assert.deepEqual((await store.getRefreshToken(next.tokenHash))?.scope, next.scope);
          assert.deepEqual((await store.getGrant(grant.id))?.scope, grant.scope);
        }

        const key = makeSigningKey();
        const ensured = await store.ensureSigningKey(key);
        ensured.status = 'retired';
        assert.equal((await store.listSigningKeys())[0]?.status, 'current');
      });
    });
  });
}
