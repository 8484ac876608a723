/**
 * The one behaviour suite every Store implementation passes (memory, SQLite, later PostgreSQL).
 * Nothing here may depend on one backend: `open` returns a fresh, empty store for each test.
 */
import assert from 'node:assert/strict';
import { after, afterEach, beforeEach, describe, it } from 'node:test';
import {
  StoreConflictError,
  type AuthorizationCodeRecord,
  type ClientRecord,
  type ConsentRecord,
  type ConsumeResult,
  type GrantRecord,
  type InteractionRecord,
  type RefreshTokenRecord,
  type SessionRecord,
  type SigningKeyRecord,
  type Store,
  type UpstreamSessionRecord,
  type UserIdentityRecord,
  type UserRecord,
} from '../../src/store/index.js';
import { hashSecret } from '../../src/core/secrets.js';
import { SPENT_KEY_CHARS, type RefreshRequest, type RefreshResult, type SpentRefreshTokenRecord } from '../../src/store/store.js';

/** The tests' clock: whole seconds, passed to every time-dependent method. */
export const NOW = 1_700_000_000;

let counter = 0;
const uniqueId = (prefix: string): string => `${prefix}-${++counter}`;

// ---------------------------------------------------------------------------------------------
// Record factories: valid records with unique ids; override what a test cares about.

export function makeClient(overrides: Partial<ClientRecord> = {}): ClientRecord {
  return {
    clientId: uniqueId('client'),
    clientSecretHash: null,
    tokenEndpointAuthMethod: 'none',
    redirectUris: ['https://app.example/callback', 'http://127.0.0.1/callback'],
    grantTypes: ['authorization_code', 'refresh_token'],
    responseTypes: ['code'],
    clientName: 'Example App',
    scope: null,
    metadata: { client_name: 'Example App', redirect_uris: ['https://app.example/callback'], nested: { a: [1, 2] } },
    canIntrospect: false,
    registeredBy: 'dynamic',
    createdAt: NOW,
    lastUsedAt: null,
    ...overrides,
  };
}

export function makeUser(overrides: Partial<UserRecord> = {}): UserRecord {
  const id = uniqueId('user');
  return { id, username: `name-of-${id}`, passwordHash: 'scrypt$hash', createdAt: NOW, ...overrides };
}

export function makeInteraction(clientId: string, overrides: Partial<InteractionRecord> = {}): InteractionRecord {
  return {
    id: uniqueId('interaction'),
    clientId,
    request: {
      clientId,
      redirectUri: 'https://app.example/callback',
      redirectUriProvided: true,
      state: 'xyz',
      scope: ['read', 'write'],
      resource: 'https://mcp.example/',
      codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      codeChallengeMethod: 'S256',
      prompt: [],
    },
    browserBindingHash: 'binding-hash',
    csrfToken: 'csrf',
    userId: null,
    createdAt: NOW,
    expiresAt: NOW + 600,
    upstream: null,
    ...overrides,
  };
}

export function makeSession(userId: string, overrides: Partial<SessionRecord> = {}): SessionRecord {
  return { idHash: uniqueId('session'), userId, authTime: NOW, createdAt: NOW, expiresAt: NOW + 3600, upstreamSessionId: null, ...overrides };
}

export function makeConsent(userId: string, clientId: string, overrides: Partial<ConsentRecord> = {}): ConsentRecord {
  return { userId, clientId, resource: 'https://mcp.example/', scope: ['read'], createdAt: NOW, updatedAt: NOW, ...overrides };
}

export function makeGrant(clientId: string, userId: string | null, overrides: Partial<GrantRecord> = {}): GrantRecord {
  return {
    id: uniqueId('grant'),
    clientId,
    userId,
    scope: ['read'],
    resource: 'https://mcp.example/',
    authTime: userId === null ? null : NOW,
    createdAt: NOW,
    revokedAt: null,
    upstreamSessionId: null,
    accessExpiresAt: null,
    ...overrides,
  };
}

export function makeCode(grant: GrantRecord, overrides: Partial<AuthorizationCodeRecord> = {}): AuthorizationCodeRecord {
  return {
    codeHash: uniqueId('code'),
    grantId: grant.id,
    clientId: grant.clientId,
    userId: grant.userId ?? 'no-user',
    redirectUri: 'https://app.example/callback',
    redirectUriProvided: true,
    codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    scope: grant.scope,
    resource: grant.resource,
    authTime: NOW,
    createdAt: NOW,
    expiresAt: NOW + 60,
    consumedAt: null,
    ...overrides,
  };
}

export function makeRefreshToken(grant: GrantRecord, overrides: Partial<RefreshTokenRecord> = {}): RefreshTokenRecord {
  return {
    // Shaped as the server's hashes are (base64url SHA-256): spent records keep a prefix of it.
    tokenHash: hashSecret(uniqueId('refresh')),
    grantId: grant.id,
    clientId: grant.clientId,
    scope: grant.scope,
    createdAt: NOW,
    expiresAt: NOW + 86_400,
    ...overrides,
  };
}

export function makeUpstreamSession(userId: string, overrides: Partial<UpstreamSessionRecord> = {}): UpstreamSessionRecord {
  return { id: uniqueId('upstream'), userId, provider: 'corp', subject: 'sub-1', sealedTokens: 'v1.key.nonce.body', createdAt: NOW, expiresAt: NOW + 3600, ...overrides };
}

export function makeSigningKey(overrides: Partial<SigningKeyRecord> = {}): SigningKeyRecord {
  const kid = uniqueId('kid');
  return {
    kid,
    alg: 'ES256',
    privateJwk: JSON.stringify({ kty: 'EC', kid, d: 'private' }),
    publicJwk: JSON.stringify({ kty: 'EC', kid }),
    status: 'current',
    createdAt: NOW,
    ...overrides,
  };
}

/** A refresh request of `next`'s client for the token `oldHash`, its access token expiring 600 s after `now`. */
export function refreshOf(oldHash: string, next: RefreshTokenRecord, now: number, overrides: Partial<RefreshRequest> = {}): RefreshRequest {
  return {
    tokenHash: oldHash,
    clientId: next.clientId,
    next: { tokenHash: next.tokenHash, createdAt: next.createdAt, expiresAt: next.expiresAt },
    accessExpiresAt: now + 600,
    now,
    upstreamChecked: true,
    ...overrides,
  };
}

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

// ---------------------------------------------------------------------------------------------

export function runStoreSuite(name: string, open: () => Promise<Store> | Store, cleanup?: () => Promise<void> | void): void {
  describe(name, () => {
    let store: Store;

    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.close();
    });
    if (cleanup) after(cleanup);

    /** A client, a user and an authorization_code grant between them. */
    async function seed(grantOverrides: Partial<GrantRecord> = {}) {
      const client = makeClient();
      const user = makeUser();
      await store.createClient(client);
      await store.createUser(user);
      const grant = makeGrant(client.clientId, user.id, grantOverrides);
      await store.createGrant(grant);
      return { client, user, grant };
    }

    /** Saves a refresh token as a code's redemption does (issueTokens), with no access token to speak of. */
    async function saveRefreshToken(token: RefreshTokenRecord): Promise<void> {
      await store.issueTokens(token.grantId, 0, token);
    }

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

      it('touchClient records use at most once a day; sweeping removes dynamic clients unused since a time', async () => {
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

        const user = makeUser();
        await store.createUser(user);
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

      it('lists clients oldest first', async () => {
        const newer = makeClient({ createdAt: NOW + 10 });
        const older = makeClient({ createdAt: NOW - 10 });
        await store.createClient(newer);
        await store.createClient(older);
        assert.deepEqual(await store.listClients(), [older, newer]);
      });

      it('deletes a client once', async () => {
        const client = makeClient();
        await store.createClient(client);
        assert.equal(await store.deleteClient(client.clientId), true);
        assert.equal(await store.getClient(client.clientId), undefined);
        assert.equal(await store.deleteClient(client.clientId), false);
        assert.equal(await store.deleteClient('nope'), false);
      });

      it('deleting a client deletes its grants, codes, tokens, consents and interactions, and nothing else', async () => {
        const { client, user, grant } = await seed();
        const other = makeClient();
        await store.createClient(other);
        const otherGrant = makeGrant(other.clientId, user.id);
        await store.createGrant(otherGrant);

        const code = makeCode(grant);
        const refresh = makeRefreshToken(grant);
        const interaction = makeInteraction(client.clientId);
        await store.saveAuthorizationCode(code);
        await saveRefreshToken(refresh);
        await store.createInteraction(interaction);
        await store.saveConsent(makeConsent(user.id, client.clientId));
        const otherRefresh = makeRefreshToken(otherGrant);
        await saveRefreshToken(otherRefresh);
        await store.saveConsent(makeConsent(user.id, other.clientId));

        assert.equal(await store.deleteClient(client.clientId), true);

        assert.equal(await store.getGrant(grant.id), undefined);
        assert.equal((await store.consumeAuthorizationCode(code.codeHash, NOW)).status, 'missing');
        assert.equal(await store.getRefreshToken(refresh.tokenHash), undefined);
        assert.equal(await store.getInteraction(interaction.id, NOW), undefined);
        assert.deepEqual(await store.listConsents({ clientId: client.clientId }), []);

        assert.ok(await store.getUserById(user.id));
        assert.ok(await store.getGrant(otherGrant.id));
        assert.ok(await store.getRefreshToken(otherRefresh.tokenHash));
        assert.equal((await store.listConsents({ userId: user.id })).length, 1);
      });
    });

    describe('users', () => {
      it('finds a user by id and by username', async () => {
        const user = makeUser();
        await store.createUser(user);
        assert.deepEqual(await store.getUserById(user.id), user);
        assert.deepEqual(await store.getUserByUsername(user.username), user);
        assert.equal(await store.getUserById('nope'), undefined);
        assert.equal(await store.getUserByUsername('nope'), undefined);
      });

      it('refuses a taken username', async () => {
        const user = makeUser({ username: 'alice' });
        await store.createUser(user);
        await assert.rejects(store.createUser(makeUser({ username: 'alice' })), StoreConflictError);
        assert.deepEqual(await store.listUsers(), [user]);
      });

      it('refuses a duplicate user id', async () => {
        const user = makeUser();
        await store.createUser(user);
        await assert.rejects(store.createUser(makeUser({ id: user.id })), StoreConflictError);
      });

      it('lists users by username', async () => {
        const bob = makeUser({ username: 'bob' });
        const alice = makeUser({ username: 'alice' });
        await store.createUser(bob);
        await store.createUser(alice);
        assert.deepEqual(await store.listUsers(), [alice, bob]);
      });

      it('deleting a user deletes their sessions, consents, interactions and grants, and nothing else', async () => {
        const { client, user, grant } = await seed();
        const other = makeUser();
        await store.createUser(other);
        const otherGrant = makeGrant(client.clientId, other.id);
        await store.createGrant(otherGrant);

        const session = makeSession(user.id);
        const otherSession = makeSession(other.id);
        const interaction = makeInteraction(client.clientId, { userId: user.id });
        const code = makeCode(grant);
        const refresh = makeRefreshToken(grant);
        await store.createSession(session);
        await store.createSession(otherSession);
        await store.createInteraction(interaction);
        await store.saveConsent(makeConsent(user.id, client.clientId));
        await store.saveConsent(makeConsent(other.id, client.clientId));
        await store.saveAuthorizationCode(code);
        await saveRefreshToken(refresh);

        assert.equal(await store.deleteUser(user.username), true);

        assert.equal(await store.getUserById(user.id), undefined);
        assert.equal(await store.getSession(session.idHash, NOW), undefined);
        assert.equal(await store.getInteraction(interaction.id, NOW), undefined);
        assert.deepEqual(await store.listConsents({ userId: user.id }), []);
        assert.equal(await store.getGrant(grant.id), undefined);
        assert.equal((await store.consumeAuthorizationCode(code.codeHash, NOW)).status, 'missing');
        assert.equal(await store.getRefreshToken(refresh.tokenHash), undefined);

        assert.ok(await store.getClient(client.clientId));
        assert.ok(await store.getSession(otherSession.idHash, NOW));
        assert.ok(await store.getGrant(otherGrant.id));
        assert.equal((await store.listConsents({ userId: other.id })).length, 1);
        assert.equal(await store.deleteUser(user.username), false);
      });

      it('a new password ends the user\'s sessions and pending sign-ins, and keeps their grants and other users\' sessions', async () => {
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

        assert.equal((await store.getUserById(user.id))?.passwordHash, 'scrypt$new');
        assert.equal((await store.getUserById(other.id))?.passwordHash, other.passwordHash);
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

      it('records the user who logged in', async () => {
        const { client, user } = await seed();
        const interaction = makeInteraction(client.clientId);
        await store.createInteraction(interaction);
        await store.setInteractionUser(interaction.id, user.id);
        assert.equal((await store.getInteraction(interaction.id, NOW))?.userId, user.id);
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
      it('round-trips, hides expired sessions and deletes', async () => {
        const user = makeUser();
        await store.createUser(user);
        const session = makeSession(user.id, { expiresAt: NOW + 10 });
        await store.createSession(session);
        assert.deepEqual(await store.getSession(session.idHash, NOW), session);
        assert.equal(await store.getSession(session.idHash, NOW + 10), undefined);
        await store.deleteSession(session.idHash);
        assert.equal(await store.getSession(session.idHash, NOW), undefined);
        await store.deleteSession('nope');
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

      it('lists consents by user, by client, by both or all', async () => {
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

      it('revokeConsents deletes the consents and revokes the grants of that user and client only', async () => {
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
    });

    describe('authorization codes', () => {
      it('is consumed once, then reported as replayed', async () => {
        const { grant } = await seed();
        const code = makeCode(grant);
        await store.saveAuthorizationCode(code);
        const first = expectRecord(await store.consumeAuthorizationCode(code.codeHash, NOW + 1), 'ok');
        assert.deepEqual(first, { ...code, consumedAt: NOW + 1 });
        const second = expectRecord(await store.consumeAuthorizationCode(code.codeHash, NOW + 2), 'replayed');
        assert.equal(second.consumedAt, NOW + 1);
      });

      it('is expired at and after expiresAt, and stays unused', async () => {
        const { grant } = await seed();
        const code = makeCode(grant, { expiresAt: NOW + 60 });
        await store.saveAuthorizationCode(code);
        assert.deepEqual(expectRecord(await store.consumeAuthorizationCode(code.codeHash, NOW + 60), 'expired'), code);
        assert.equal((await store.consumeAuthorizationCode(code.codeHash, NOW + 600)).status, 'expired');
      });

      it('a used code stays a replay after it expires', async () => {
        const { grant } = await seed();
        const code = makeCode(grant, { expiresAt: NOW + 60 });
        await store.saveAuthorizationCode(code);
        expectRecord(await store.consumeAuthorizationCode(code.codeHash, NOW), 'ok');
        expectRecord(await store.consumeAuthorizationCode(code.codeHash, NOW + 120), 'replayed');
      });

      it('is missing when unknown', async () => {
        assert.deepEqual(await store.consumeAuthorizationCode('nope', NOW), { status: 'missing' });
      });

      it('is not consumed once its grant is revoked, and says so', async () => {
        const { grant } = await seed();
        const code = makeCode(grant);
        await store.saveAuthorizationCode(code);
        await store.revokeGrant(grant.id, NOW);
        assert.deepEqual(expectRecord(await store.consumeAuthorizationCode(code.codeHash, NOW + 1), 'revoked'), code);
        // Still unused: the refusal did not spend it.
        assert.equal((await store.consumeAuthorizationCode(code.codeHash, NOW + 2)).status, 'revoked');
      });

      it('refuses a duplicate code and a code for an unknown grant', async () => {
        const { grant } = await seed();
        const code = makeCode(grant);
        await store.saveAuthorizationCode(code);
        await assert.rejects(store.saveAuthorizationCode(code), StoreConflictError);
        await assert.rejects(store.saveAuthorizationCode(makeCode({ ...grant, id: 'no-such-grant' })));
      });

      it('creates a grant with its code in one step, or neither when the code is refused', async () => {
        const { client, user } = await seed();
        const grant = makeGrant(client.clientId, user.id);
        const code = makeCode(grant);
        await store.createGrantWithCode(grant, code);
        assert.equal((await store.getGrant(grant.id))?.id, grant.id);
        assert.equal((await store.consumeAuthorizationCode(code.codeHash, NOW)).status, 'ok');

        // The same code hash again, for a new grant: the conflict leaves no grant behind.
        const orphan = makeGrant(client.clientId, user.id);
        await assert.rejects(store.createGrantWithCode(orphan, { ...code, grantId: orphan.id }), StoreConflictError);
        assert.equal(await store.getGrant(orphan.id), undefined);
      });

      it('redeems a code with its tokens in one step; a refusal still uses the code, a throw uses nothing', async () => {
        const { grant } = await seed();
        const refused = makeCode(grant);
        await store.createGrantWithCode(makeGrant(grant.clientId, grant.userId), makeCode(grant));
        await store.saveAuthorizationCode(refused);
        assert.equal((await store.redeemAuthorizationCode(refused.codeHash, NOW, () => undefined)).status, 'ok');
        assert.equal((await store.consumeAuthorizationCode(refused.codeHash, NOW)).status, 'replayed');

        const thrown = makeCode(grant);
        await store.saveAuthorizationCode(thrown);
        await assert.rejects(store.redeemAuthorizationCode(thrown.codeHash, NOW, () => { throw new Error('no'); }), /no/);
        const accepted = makeRefreshToken(grant);
        const result = await store.redeemAuthorizationCode(thrown.codeHash, NOW, (record) => {
          assert.equal(record.codeHash, thrown.codeHash);
          return { accessExpiresAt: NOW + 600, refreshToken: accepted };
        });
        assert.equal(result.status, 'ok');
        assert.equal((await store.getRefreshToken(accepted.tokenHash))?.grantId, grant.id);
        assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, NOW + 600);
      });

      it('50 concurrent consumers: exactly one gets it', async () => {
        const { grant } = await seed();
        const code = makeCode(grant);
        await store.saveAuthorizationCode(code);
        const results = await Promise.all(Array.from({ length: 50 }, () => store.consumeAuthorizationCode(code.codeHash, NOW)));
        assert.equal(results.filter((r) => r.status === 'ok').length, 1);
        assert.equal(results.filter((r) => r.status === 'replayed').length, 49);
      });
    });

    describe('refresh tokens', () => {
      it('round-trips', async () => {
        const { grant } = await seed();
        const token = makeRefreshToken(grant);
        await saveRefreshToken(token);
        assert.deepEqual(await store.getRefreshToken(token.tokenHash), token);
        assert.equal(await store.getRefreshToken('nope'), undefined);
      });

      it('rotates: the old one is gone, a spent record of it is kept, the new one is stored', async () => {
        const { grant } = await seed();
        const old = makeRefreshToken(grant);
        const next = makeRefreshToken(grant, { createdAt: NOW + 5 });
        await saveRefreshToken(old);
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
        const { grant } = await seed();
        const old = makeRefreshToken(grant);
        await saveRefreshToken(old);
        expectRecord(await rotate(old.tokenHash, makeRefreshToken(grant), NOW), 'ok');
        const stolen = makeRefreshToken(grant);
        const replayed = expectRecord(await rotate(old.tokenHash, stolen, NOW + 1), 'replayed');
        assert.deepEqual(replayed, { grantId: grant.id, clientId: grant.clientId, spentAt: NOW, expiresAt: old.expiresAt, successorUnused: true });
        assert.equal(await store.getRefreshToken(stolen.tokenHash), undefined);
        assert.equal((await store.findSpentRefreshToken(old.tokenHash))?.spentAt, NOW, 'a replay does not move the time it was spent');
      });

      it('a spent record is found by its token’s hash (its first 132 bits), never by another token’s', async () => {
        const { grant } = await seed();
        const old = makeRefreshToken(grant);
        await saveRefreshToken(old);
        expectRecord(await rotate(old.tokenHash, makeRefreshToken(grant), NOW), 'ok');
        const key = old.tokenHash.slice(0, SPENT_KEY_CHARS);
        const flip = (c: string): string => (c === 'A' ? 'B' : 'A');
        assert.ok(await store.findSpentRefreshToken(`${key}${'x'.repeat(old.tokenHash.length - SPENT_KEY_CHARS)}`), 'the key is the prefix');
        assert.equal(await store.findSpentRefreshToken(`${key.slice(0, -1)}${flip(key.at(-1)!)}${old.tokenHash.slice(SPENT_KEY_CHARS)}`), undefined);
        assert.equal(await store.findSpentRefreshToken(hashSecret('another token')), undefined);
      });

      it('two spent tokens whose hashes share the key: the rotation still succeeds, the first record stays', async () => {
        const { client, user, grant } = await seed();
        const otherGrant = makeGrant(client.clientId, user.id);
        await store.createGrant(otherGrant);
        const prefix = hashSecret('shared').slice(0, SPENT_KEY_CHARS);
        const first = makeRefreshToken(grant, { tokenHash: `${prefix}${'a'.repeat(21)}` });
        const second = makeRefreshToken(otherGrant, { tokenHash: `${prefix}${'b'.repeat(21)}` });
        await saveRefreshToken(first);
        await saveRefreshToken(second);
        expectRecord(await rotate(first.tokenHash, makeRefreshToken(grant), NOW), 'ok');
        const next = makeRefreshToken(otherGrant);
        expectRecord(await rotate(second.tokenHash, next, NOW + 1), 'ok');
        assert.deepEqual(await store.getRefreshToken(next.tokenHash), next);
        assert.equal((await store.findSpentRefreshToken(second.tokenHash))?.grantId, grant.id, 'the first record is kept');
      });

      it('a live token comes before a spent record sharing its key', async () => {
        const { grant } = await seed();
        const prefix = hashSecret('shared').slice(0, SPENT_KEY_CHARS);
        const spent = makeRefreshToken(grant, { tokenHash: `${prefix}${'a'.repeat(21)}` });
        const live = makeRefreshToken(grant, { tokenHash: `${prefix}${'b'.repeat(21)}`, expiresAt: NOW + 10 });
        await saveRefreshToken(spent);
        await saveRefreshToken(live);
        expectRecord(await rotate(spent.tokenHash, makeRefreshToken(grant), NOW), 'ok');
        assert.deepEqual(expectRecord(await rotate(live.tokenHash, makeRefreshToken(grant), NOW + 10), 'expired'), live);
        expectRecord(await rotate(live.tokenHash, makeRefreshToken(grant), NOW + 9), 'ok');
      });

      it('a spent record is not found once its grant is gone', async () => {
        const { client, grant } = await seed();
        const old = makeRefreshToken(grant);
        await saveRefreshToken(old);
        expectRecord(await rotate(old.tokenHash, makeRefreshToken(grant), NOW), 'ok');
        await store.deleteClient(client.clientId);
        assert.equal(await store.findSpentRefreshToken(old.tokenHash), undefined);
        assert.deepEqual(await rotate(old.tokenHash, makeRefreshToken(grant), NOW), { status: 'missing' });
      });

      it('an expired token is not rotated', async () => {
        const { grant } = await seed();
        const old = makeRefreshToken(grant, { expiresAt: NOW + 10 });
        const next = makeRefreshToken(grant);
        await saveRefreshToken(old);
        assert.deepEqual(expectRecord(await rotate(old.tokenHash, next, NOW + 10), 'expired'), old);
        assert.equal(await store.getRefreshToken(next.tokenHash), undefined);
        assert.deepEqual(await store.getRefreshToken(old.tokenHash), old);
        assert.equal(await store.findSpentRefreshToken(old.tokenHash), undefined);
      });

      it('a token of a revoked grant is not rotated, nor spent', async () => {
        const { grant } = await seed();
        const old = makeRefreshToken(grant);
        const next = makeRefreshToken(grant);
        await saveRefreshToken(old);
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
        const { grant } = await seed();
        const old = makeRefreshToken(grant);
        const existing = makeRefreshToken(grant);
        await saveRefreshToken(old);
        await saveRefreshToken(existing);
        await assert.rejects(rotate(old.tokenHash, existing, NOW), StoreConflictError);
        assert.deepEqual(await store.getRefreshToken(old.tokenHash), old);
        assert.equal(await store.findSpentRefreshToken(old.tokenHash), undefined);
      });

      it('50 concurrent rotations: exactly one wins and exactly one new token is stored', async () => {
        const { grant } = await seed();
        const old = makeRefreshToken(grant);
        await saveRefreshToken(old);
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

    describe('retryRefresh', () => {
      /** A retry from `next`'s client of the refresh that spent `oldHash`, allowed for tokens spent after `spentAfter`. */
      async function retry(oldHash: string, next: RefreshTokenRecord, now: number, spentAfter: number, overrides: Partial<RefreshRequest> = {}): Promise<RefreshResult> {
        return store.retryRefresh(refreshOf(oldHash, next, now, overrides), spentAfter);
      }

      /** The spent record a refused retry reports. */
      function replayed(result: RefreshResult): SpentRefreshTokenRecord {
        assert.equal(result.status, 'replayed');
        return (result as Extract<RefreshResult, { status: 'replayed' }>).record;
      }

      /** A token rotated at NOW to `successor`, its grant's only live token. */
      async function rotated(grantOverrides: Partial<GrantRecord> = {}) {
        const { client, user, grant } = await seed(grantOverrides);
        const old = makeRefreshToken(grant);
        const successor = makeRefreshToken(grant, { expiresAt: NOW + 50_000 });
        await saveRefreshToken(old);
        expectRecord(await rotate(old.tokenHash, successor, NOW), 'ok');
        return { client, user, grant, old, successor };
      }

      it('replaces the unused successor: the new token takes its place, the successor is kept as spent, naming none', async () => {
        const { grant, old, successor } = await rotated({ scope: ['read', 'write'] });
        const next = makeRefreshToken(grant, { createdAt: NOW + 10, expiresAt: NOW + 999, scope: ['other'] });
        const result = await retry(old.tokenHash, next, NOW + 10, NOW - 50, { accessExpiresAt: NOW + 610 });
        assert.deepEqual(result, { status: 'ok', grant: { ...grant, accessExpiresAt: NOW + 610 }, scope: successor.scope });
        assert.deepEqual(await store.getRefreshToken(next.tokenHash), { ...next, scope: successor.scope });
        assert.equal(await store.getRefreshToken(successor.tokenHash), undefined);
        assert.deepEqual(await store.findSpentRefreshToken(successor.tokenHash), {
          grantId: grant.id, clientId: grant.clientId, spentAt: NOW + 10, expiresAt: successor.expiresAt, successorUnused: false,
        });
        assert.deepEqual(await store.findSpentRefreshToken(old.tokenHash), {
          grantId: grant.id, clientId: grant.clientId, spentAt: NOW, expiresAt: old.expiresAt, successorUnused: false,
        }, 'the spent record keeps its time and still names the replaced successor');
        assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, NOW + 610);
      });

      it('once: a second retry of the token, and a retry of the replaced successor, change nothing', async () => {
        const { grant, old, successor } = await rotated();
        const first = makeRefreshToken(grant);
        assert.equal((await retry(old.tokenHash, first, NOW + 1, NOW - 60)).status, 'ok');
        const second = makeRefreshToken(grant);
        assert.deepEqual(replayed(await retry(old.tokenHash, second, NOW + 2, NOW - 60)), {
          grantId: grant.id, clientId: grant.clientId, spentAt: NOW, expiresAt: old.expiresAt, successorUnused: false,
        });
        replayed(await retry(successor.tokenHash, second, NOW + 2, NOW - 60));
        assert.equal(await store.getRefreshToken(second.tokenHash), undefined);
        assert.ok(await store.getRefreshToken(first.tokenHash), 'the first retry\'s token stays live');
      });

      it('not once the successor was used: the family goes on untouched', async () => {
        const { grant, old, successor } = await rotated();
        const third = makeRefreshToken(grant);
        expectRecord(await rotate(successor.tokenHash, third, NOW + 1), 'ok');
        const next = makeRefreshToken(grant);
        replayed(await retry(old.tokenHash, next, NOW + 2, NOW - 60));
        assert.equal(await store.getRefreshToken(next.tokenHash), undefined);
        assert.ok(await store.getRefreshToken(third.tokenHash));
      });

      it('not for a token spent at or before spentAfter, nor one never spent or unknown', async () => {
        const { grant, old, successor } = await rotated();
        const next = makeRefreshToken(grant);
        replayed(await retry(old.tokenHash, next, NOW + 60, NOW));
        const live = makeRefreshToken(grant);
        await saveRefreshToken(live);
        assert.notEqual((await retry(live.tokenHash, next, NOW + 1, NOW - 60)).status, 'ok', 'a live token is not a retry (nor spent by one)');
        assert.ok(await store.getRefreshToken(live.tokenHash));
        assert.deepEqual(await retry('nope', next, NOW + 1, NOW - 60), { status: 'missing' });
        assert.equal(await store.getRefreshToken(next.tokenHash), undefined);
        assert.ok(await store.getRefreshToken(successor.tokenHash));
      });

      it('not for another client, a revoked grant, an expired successor or an unchecked upstream sign-in', async () => {
        const cases: { why: string; setUp: (family: Awaited<ReturnType<typeof rotated>>) => Promise<Partial<RefreshRequest>> }[] = [
          { why: 'another client', setUp: async () => ({ clientId: 'someone-else' }) },
          { why: 'a revoked grant', setUp: async ({ grant }) => (await store.revokeGrant(grant.id, NOW), {}) },
          { why: 'an expired successor', setUp: async () => ({ now: NOW + 50_000 }) },
        ];
        for (const { why, setUp } of cases) {
          const family = await rotated();
          const overrides = await setUp(family);
          const next = makeRefreshToken(family.grant);
          assert.equal((await retry(family.old.tokenHash, next, NOW + 1, NOW - 60, overrides)).status, 'replayed', why);
          assert.equal(await store.getRefreshToken(next.tokenHash), undefined, why);
          assert.ok(await store.getRefreshToken(family.successor.tokenHash), why);
          assert.equal((await store.getGrant(family.grant.id))?.accessExpiresAt, NOW + 600, `${why}: the grant's expiry stays`);
        }
        const { user } = await seed();
        const session = makeUpstreamSession(user.id);
        await store.createUpstreamSession(session);
        const { grant, old, successor } = await rotated({ upstreamSessionId: session.id });
        const next = makeRefreshToken(grant);
        replayed(await retry(old.tokenHash, next, NOW + 1, NOW - 60, { upstreamChecked: false }));
        assert.ok(await store.getRefreshToken(successor.tokenHash));
        assert.equal((await retry(old.tokenHash, next, NOW + 1, NOW - 60, { upstreamChecked: true })).status, 'ok');
      });

      it('a failed insert of the new token leaves the successor live and unspent', async () => {
        const { grant, old, successor } = await rotated();
        const existing = makeRefreshToken(grant);
        await saveRefreshToken(existing);
        await assert.rejects(retry(old.tokenHash, existing, NOW + 1, NOW - 60), StoreConflictError);
        assert.ok(await store.getRefreshToken(successor.tokenHash));
        assert.equal(await store.findSpentRefreshToken(successor.tokenHash), undefined);
        assert.equal((await store.findSpentRefreshToken(old.tokenHash))?.successorUnused, true);
      });

      it('20 concurrent retries of one token: exactly one replaces the successor, and the family has one live token', async () => {
        const { grant, old, successor } = await rotated();
        const nexts = Array.from({ length: 20 }, () => makeRefreshToken(grant));
        const results = await Promise.all(nexts.map((next) => retry(old.tokenHash, next, NOW + 1, NOW - 60)));
        assert.equal(results.filter((r) => r.status === 'ok').length, 1, results.map((r) => r.status).join(' '));
        assert.equal(results.filter((r) => r.status === 'replayed').length, 19);
        const stored = await Promise.all(nexts.map((next) => store.getRefreshToken(next.tokenHash)));
        assert.equal(stored.filter((t) => t !== undefined).length, 1);
        assert.ok(stored[results.findIndex((r) => r.status === 'ok')]);
        assert.equal(await store.getRefreshToken(successor.tokenHash), undefined);
      });

      it('a retry racing the successor’s own rotation: exactly one of them wins, leaving one live token', async () => {
        for (let round = 0; round < 10; round++) {
          const { grant, old, successor } = await rotated();
          const retried = makeRefreshToken(grant);
          const next = makeRefreshToken(grant);
          const retrying = () => retry(old.tokenHash, retried, NOW + 1, NOW - 60);
          const rotating = () => store.refreshGrant(refreshOf(successor.tokenHash, next, NOW + 1));
          const [a, b] = round % 2 === 0 ? await Promise.all([retrying(), rotating()]) : ((await Promise.all([rotating(), retrying()])).reverse() as [RefreshResult, RefreshResult]);
          assert.deepEqual([a.status, b.status].sort(), ['ok', 'replayed'], `round ${round}`);
          const live = [await store.getRefreshToken(retried.tokenHash), await store.getRefreshToken(next.tokenHash), await store.getRefreshToken(successor.tokenHash)];
          assert.equal(live.filter((t) => t !== undefined).length, 1, `round ${round}: one live token`);
          assert.ok(a.status === 'ok' ? live[0] : live[1], `round ${round}: the winner's`);
        }
      });
    });

    describe('refreshGrant', () => {
      it('returns the grant (its access expiry raised) and the spent token’s scope; the new token takes its grant, client and scope', async () => {
        const { grant } = await seed({ scope: ['read', 'write'] });
        const old = makeRefreshToken(grant, { scope: ['read'] });
        await saveRefreshToken(old);
        const next = makeRefreshToken(grant, { createdAt: NOW + 5, expiresAt: NOW + 999 });
        const result = await store.refreshGrant(refreshOf(old.tokenHash, next, NOW + 5, { accessExpiresAt: NOW + 605 }));
        assert.deepEqual(result, { status: 'ok', grant: { ...grant, accessExpiresAt: NOW + 605 }, scope: ['read'] });
        assert.deepEqual(await store.getRefreshToken(next.tokenHash), { ...next, scope: ['read'] });
        assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, NOW + 605);
      });

      it('another client’s token is foreign: left as it is, unspent', async () => {
        const { grant } = await seed();
        const old = makeRefreshToken(grant);
        await saveRefreshToken(old);
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
        const { grant } = await seed({ upstreamSessionId: session.id });
        const old = makeRefreshToken(grant);
        await saveRefreshToken(old);
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
        const { grant } = await seed({ upstreamSessionId: session.id });
        const old = makeRefreshToken(grant);
        await saveRefreshToken(old);
        await store.revokeGrant(grant.id, NOW);
        assert.equal((await store.refreshGrant(refreshOf(old.tokenHash, makeRefreshToken(grant), NOW, { upstreamChecked: false }))).status, 'revoked');
      });

      it('a refresh racing a revocation: either it is refused, or the recorded revocation covers its access token', async () => {
        for (let round = 0; round < 10; round++) {
          const { grant } = await seed();
          const old = makeRefreshToken(grant);
          await saveRefreshToken(old);
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
      it('issueTokens raises the grant’s access expiry (never lowers it) and saves the refresh token; a missing grant is refused', async () => {
        const { grant } = await seed();
        await store.issueTokens(grant.id, NOW + 600);
        const refresh = makeRefreshToken(grant);
        await store.issueTokens(grant.id, NOW + 300, refresh);
        assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, NOW + 600);
        assert.deepEqual(await store.getRefreshToken(refresh.tokenHash), refresh);
        await assert.rejects(store.issueTokens('no-such-grant', NOW + 900, makeRefreshToken({ ...grant, id: 'no-such-grant' })));
      });

      it('revokeAccessToken records the token once, while it is unexpired; isAccessTokenRevoked tells', async () => {
        assert.equal(await store.isAccessTokenRevoked('jti-1'), false);
        await store.revokeAccessToken('jti-1', NOW + 600, NOW + 1);
        await store.revokeAccessToken('jti-1', NOW + 600, NOW + 2);
        assert.equal(await store.isAccessTokenRevoked('jti-1'), true);
        assert.deepEqual(await store.listRevocations(0, NOW), [{ kind: 'token', id: 'jti-1', revokedAt: NOW + 1, expiresAt: NOW + 600 }]);
        await store.revokeAccessToken('jti-expired', NOW, NOW);
        assert.equal(await store.isAccessTokenRevoked('jti-expired'), false, 'an expired token needs no record');
      });
    });

    describe('revocations', () => {
      it('revokeGrant records the grant until the latest exp of its access tokens, once', async () => {
        const { grant } = await seed();
        await store.issueTokens(grant.id, NOW + 300);
        await store.issueTokens(grant.id, NOW + 600);
        await store.issueTokens(grant.id, NOW - 5);
        assert.deepEqual(await store.listRevocations(0, NOW), []);
        await store.revokeGrant(grant.id, NOW + 1);
        await store.revokeGrant(grant.id, NOW + 2);
        assert.deepEqual(await store.listRevocations(0, NOW + 2), [{ kind: 'grant', id: grant.id, revokedAt: NOW + 1, expiresAt: NOW + 600 }]);
      });

      it('records nothing for a grant whose access tokens have all expired, or that issued none (nothing left to refuse)', async () => {
        const { grant } = await seed();
        await store.issueTokens(grant.id, NOW);
        await store.revokeGrant(grant.id, NOW);
        const quiet = (await seed()).grant;
        await store.revokeGrant(quiet.id, NOW);
        assert.deepEqual(await store.listRevocations(0, NOW), []);
      });

      it('lists from a cursor (revoked at or after it) and only what still affects an unexpired token', async () => {
        await store.revokeAccessToken('early', NOW + 100, NOW + 10);
        await store.revokeAccessToken('late', NOW + 900, NOW + 20);
        assert.deepEqual((await store.listRevocations(0, NOW + 20)).map((r) => [r.kind, r.id, r.revokedAt, r.expiresAt]), [
          ['token', 'early', NOW + 10, NOW + 100],
          ['token', 'late', NOW + 20, NOW + 900],
        ]);
        assert.deepEqual((await store.listRevocations(NOW + 11, NOW + 20)).map((r) => r.id), ['late']);
        assert.deepEqual((await store.listRevocations(0, NOW + 100)).map((r) => r.id), ['late']);
      });

      it('revokeConsents, deleteClient and deleteUser record the grants they end, with tokens still in hand', async () => {
        const { client, user, grant } = await seed();
        await store.issueTokens(grant.id, NOW + 500);
        await store.saveConsent(makeConsent(user.id, client.clientId));
        await store.revokeConsents(user.id, client.clientId, NOW + 1);
        const second = await seed();
        await store.issueTokens(second.grant.id, NOW + 500);
        await store.deleteClient(second.client.clientId, NOW + 2);
        const third = await seed();
        await store.issueTokens(third.grant.id, NOW + 500);
        await store.deleteUser(third.user.username, NOW + 3);
        assert.deepEqual((await store.listRevocations(0, NOW)).map((r) => [r.id, r.revokedAt]), [
          [grant.id, NOW + 1],
          [second.grant.id, NOW + 2],
          [third.grant.id, NOW + 3],
        ]);
      });

      it('a token issued after its grant was revoked lengthens the recorded revocation to cover it', async () => {
        const { grant } = await seed();
        await store.issueTokens(grant.id, NOW + 100);
        await store.revokeGrant(grant.id, NOW);
        await store.issueTokens(grant.id, NOW + 700);
        await store.issueTokens(grant.id, NOW + 650);
        assert.deepEqual(await store.listRevocations(0, NOW), [{ kind: 'grant', id: grant.id, revokedAt: NOW, expiresAt: NOW + 700 }]);
        const quiet = (await seed()).grant;
        await store.revokeGrant(quiet.id, NOW);
        await store.issueTokens(quiet.id, NOW + 300);
        assert.deepEqual((await store.listRevocations(0, NOW)).map((r) => [r.id, r.expiresAt]), [
          [grant.id, NOW + 700],
          [quiet.id, NOW + 300],
        ]);
      });

      it('a revocation racing token issues covers every token issued', async () => {
        const { grant } = await seed();
        const issues = Array.from({ length: 30 }, (_, i) => store.issueTokens(grant.id, NOW + 100 + i));
        const revoked = store.revokeGrant(grant.id, NOW);
        await Promise.all([...issues, revoked]);
        assert.deepEqual((await store.listRevocations(0, NOW)).map((r) => r.expiresAt), [NOW + 129]);
      });

      it('the sweep removes a revocation a minute after its last token expired', async () => {
        const { grant } = await seed();
        await store.issueTokens(grant.id, NOW + 100);
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

      it('rotates current → previous → retired, listing newest first', async () => {
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

      it('orders keys created in the same second by rotation order', async () => {
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

      it('ensureSigningKey returns the current key after a rotation', async () => {
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
      // Unique keys: a PostgreSQL database outlives one test.
      let bucket = { key: '', burst: 3, perSecond: 1 };
      beforeEach(() => {
        bucket = { ...bucket, key: `register:${Math.random()}` };
      });

      it('a new bucket starts full; grants what it holds, up to the want; refills with time, never past the burst', async () => {
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

      it('concurrent takes never grant more than the bucket holds', async () => {
        const results = await Promise.all(Array.from({ length: 20 }, () => store.takeRateTokens({ ...bucket, burst: 7, want: 1, nowMs: T })));
        assert.equal(results.reduce((sum, r) => sum + r.granted, 0), 7);
      });

      it('a bucket full again is swept; one still refilling is kept', async () => {
        await store.sweepExpired(NOW + 1_000_000);
        await store.takeRateTokens({ ...bucket, want: 3, nowMs: T });
        assert.equal(await store.sweepExpired(NOW + 2), 0);
        assert.equal(await store.sweepExpired(NOW + 3), 1);
        // Swept means full: the next take sees a new bucket, as it would have seen a refilled one.
        assert.deepEqual(await store.takeRateTokens({ ...bucket, want: 3, nowMs: T + 3000 }), { granted: 3, level: 0 });
      });
    });

    describe('sweepExpired', () => {
      it('sweeps more rows than one batch holds, all of them', async () => {
        const { grant } = await seed();
        const bulk = Array.from({ length: 1200 }, () => makeRefreshToken(grant, { expiresAt: NOW - 1 }));
        for (const token of bulk) await saveRefreshToken(token);
        const live = makeRefreshToken(grant, { expiresAt: NOW + 60 });
        await saveRefreshToken(live);
        assert.ok((await store.sweepExpired(NOW)) >= 1200);
        assert.equal(await store.getRefreshToken(bulk[0]!.tokenHash), undefined);
        assert.equal(await store.getRefreshToken(bulk[1199]!.tokenHash), undefined);
        assert.ok(await store.getRefreshToken(live.tokenHash));
      });

      it('an aborted sweep deletes nothing more, and the next sweep takes all that is left', async () => {
        const { grant } = await seed();
        const expired = Array.from({ length: 30 }, () => makeRefreshToken(grant, { expiresAt: NOW - 1 }));
        for (const token of expired) await saveRefreshToken(token);
        const controller = new AbortController();
        controller.abort();
        assert.equal(await store.sweepExpired(NOW, { signal: controller.signal }), 0);
        assert.ok(await store.getRefreshToken(expired[0]!.tokenHash), 'still there after the aborted sweep');
        assert.ok((await store.sweepExpired(NOW)) >= 30);
        for (const token of expired) assert.equal(await store.getRefreshToken(token.tokenHash), undefined);
      });

      it('a sweep rests through the pause it is given: held there, it goes on once the pause resolves', async () => {
        const { grant } = await seed();
        for (let i = 0; i < 1200; i++) await saveRefreshToken(makeRefreshToken(grant, { expiresAt: NOW - 1 }));
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
        // The SQL stores sweep in batches with a pause after each; the memory store in one pass, without any.
        if (name !== 'memory store') {
          assert.ok(asked.length > 0, 'paused after a batch');
          assert.equal(finished, false, 'held at the pause');
        }
        release();
        assert.ok((await sweep) >= 1200);
      });

      it('finds expired tokens and spent records among more live ones than a slice of the walk holds, all of them', async () => {
        const { grant } = await seed();
        // Random hashes: the expired lie scattered between the live along the key.
        const live = Array.from({ length: 2500 }, () => makeRefreshToken(grant, { expiresAt: NOW + 60 }));
        const expired = Array.from({ length: 60 }, () => makeRefreshToken(grant, { expiresAt: NOW - 1 }));
        for (const token of [...live, ...expired]) await saveRefreshToken(token);
        const rotated = expired.slice(0, 20);
        for (const token of rotated) expectRecord(await rotate(token.tokenHash, makeRefreshToken(grant, { expiresAt: NOW + 60 }), NOW - 100), 'ok');
        // The 20 rotated went to spent records (expired with their tokens); 40 expired tokens are left.
        assert.equal(await store.sweepExpired(NOW), 60);
        for (const token of expired) assert.equal(await store.getRefreshToken(token.tokenHash), undefined);
        for (const token of rotated) assert.equal(await store.findSpentRefreshToken(token.tokenHash), undefined);
        for (const token of live) assert.ok(await store.getRefreshToken(token.tokenHash));
      });

      it('walks old grants in slices with rests between them, finding the empty ones among those still in use', async () => {
        const { client, user } = await seed();
        // 3,000 old grants kept by an access token still valid; one in forty of them empty and done
        // (fewer than a batch of deletions, so that only a walk rests among them).
        const grants = Array.from({ length: 3000 }, (_, i) =>
          makeGrant(client.clientId, user.id, { createdAt: NOW - 1000, accessExpiresAt: i % 40 === 3 ? NOW - 1 : NOW + 60 }),
        );
        for (const grant of grants) await store.createGrant(grant);
        let rests = 0;
        assert.equal(await store.sweepExpired(NOW, { pause: async () => void rests++ }), 75);
        // One statement looking for empty grants among those in use read every one of them (1M:
        // 640 ms on SQLite's event loop). The memory store sweeps in one pass, without rests.
        if (name !== 'memory store') assert.ok(rests >= 2, `rests: ${rests}`);
        for (const [i, grant] of grants.entries()) assert.equal((await store.getGrant(grant.id)) === undefined, i % 40 === 3, `grant ${i}`);
      });

      it('removes expired rows and orphaned old grants, keeps live ones, and counts', async () => {
        const { client, user } = await seed();
        const old = NOW - 1000;
        const deadGrant = makeGrant(client.clientId, user.id, { createdAt: old });
        const emptyOldGrant = makeGrant(client.clientId, user.id, { createdAt: old });
        const emptyNewGrant = makeGrant(client.clientId, user.id, { createdAt: NOW - 30 });
        const liveGrant = makeGrant(client.clientId, user.id, { createdAt: old });
        // Only an access token in hand (client_credentials): kept until it expires.
        const accessOnlyGrant = makeGrant(client.clientId, null, { createdAt: old, accessExpiresAt: NOW + 60 });
        const accessExpiredGrant = makeGrant(client.clientId, null, { createdAt: old, accessExpiresAt: NOW });
        for (const grant of [deadGrant, emptyOldGrant, emptyNewGrant, liveGrant, accessOnlyGrant, accessExpiredGrant]) await store.createGrant(grant);

        const deadCode = makeCode(deadGrant, { expiresAt: NOW });
        const deadRefresh = makeRefreshToken(deadGrant, { expiresAt: NOW - 1 });
        const deadSession = makeSession(user.id, { expiresAt: NOW });
        const deadInteraction = makeInteraction(client.clientId, { expiresAt: NOW - 1 });
        const liveCode = makeCode(liveGrant, { expiresAt: NOW + 1 });
        const liveRefresh = makeRefreshToken(liveGrant);
        const liveSession = makeSession(user.id);
        const liveInteraction = makeInteraction(client.clientId);
        await store.saveAuthorizationCode(deadCode);
        await saveRefreshToken(deadRefresh);
        await store.createSession(deadSession);
        await store.createInteraction(deadInteraction);
        await store.saveAuthorizationCode(liveCode);
        await saveRefreshToken(liveRefresh);
        await store.createSession(liveSession);
        await store.createInteraction(liveInteraction);

        // 4 expired rows + the dead grant + the old empty grant + the one whose access token expired (the initial seed grant is new).
        assert.equal(await store.sweepExpired(NOW), 7);

        assert.equal((await store.consumeAuthorizationCode(deadCode.codeHash, NOW - 10)).status, 'missing');
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
        expectRecord(await store.consumeAuthorizationCode(liveCode.codeHash, NOW), 'ok');

        assert.equal(await store.sweepExpired(NOW), 0);
      });

      it('sweeps spent records when their token would have expired, and grants that only spent records remember', async () => {
        const { client, user } = await seed({ createdAt: NOW });
        const ended = makeGrant(client.clientId, user.id, { createdAt: NOW - 1000 });
        const going = makeGrant(client.clientId, user.id, { createdAt: NOW - 1000 });
        for (const grant of [ended, going]) await store.createGrant(grant);
        const endedToken = makeRefreshToken(ended, { expiresAt: NOW + 10 });
        const endedNext = makeRefreshToken(ended, { expiresAt: NOW + 10 });
        const goingToken = makeRefreshToken(going, { expiresAt: NOW + 100 });
        const goingNext = makeRefreshToken(going, { expiresAt: NOW + 200 });
        for (const token of [endedToken, goingToken]) await saveRefreshToken(token);
        // Access tokens as short-lived as the ended family's refresh tokens: a grant goes only once they expired too.
        expectRecord(await rotate(endedToken.tokenHash, endedNext, NOW, NOW + 10), 'ok');
        expectRecord(await rotate(goingToken.tokenHash, goingNext, NOW, NOW + 10), 'ok');

        // Past the ended family's tokens, spent and live: both go, then its grant.
        assert.equal(await store.sweepExpired(NOW + 10), 3);
        assert.equal(await store.findSpentRefreshToken(endedToken.tokenHash), undefined);
        assert.equal(await store.getGrant(ended.id), undefined);
        assert.ok(await store.findSpentRefreshToken(goingToken.tokenHash), 'a spent record is kept until its token would have expired');
        assert.equal((await rotate(goingToken.tokenHash, makeRefreshToken(going), NOW + 50)).status, 'replayed');

        // The spent record, and the seed's grant, empty and now old enough.
        assert.equal(await store.sweepExpired(NOW + 100), 2);
        assert.equal(await store.findSpentRefreshToken(goingToken.tokenHash), undefined);
        assert.ok(await store.getRefreshToken(goingNext.tokenHash));
      });

      it('returns 0 on an empty store', async () => {
        assert.equal(await store.sweepExpired(NOW), 0);
      });
    });

    describe('upstream identities and sessions', () => {
      const identityOf = (user: UserRecord, overrides: Partial<UserIdentityRecord> = {}): UserIdentityRecord => ({
        issuer: 'https://idp.example',
        subject: uniqueId('sub'),
        provider: 'corp',
        userId: user.id,
        email: 'person@example.com',
        name: 'A Person',
        createdAt: NOW,
        ...overrides,
      });
      const upstreamSessionOf = (user: UserRecord, overrides: Partial<UpstreamSessionRecord> = {}): UpstreamSessionRecord => ({
        id: uniqueId('upstream'),
        userId: user.id,
        provider: 'corp',
        subject: 'sub-1',
        sealedTokens: 'v1.key.nonce.body',
        createdAt: NOW,
        expiresAt: NOW + 3600,
        ...overrides,
      });

      it('a user without a password, with their identity, found by provider, issuer and subject', async () => {
        const user = makeUser({ passwordHash: null });
        const identity = identityOf(user);
        await store.createUserWithIdentity(user, identity);
        assert.deepEqual(await store.getUserByIdentity(identity), user);
        assert.deepEqual(await store.getUserById(user.id), user);
        assert.equal(await store.getUserByIdentity({ ...identity, subject: 'someone-else' }), undefined);
        assert.equal(await store.getUserByIdentity({ ...identity, issuer: 'https://other.example' }), undefined);
        assert.equal(await store.getUserByIdentity({ ...identity, provider: 'other' }), undefined);
        assert.deepEqual(await store.listUserIdentities({ userId: user.id }), [identity]);
      });

      it('the same issuer and subject at two providers are two people', async () => {
        const first = makeUser({ passwordHash: null });
        const second = makeUser({ passwordHash: null });
        const identity = identityOf(first, { provider: 'hub', subject: '1001' });
        await store.createUserWithIdentity(first, identity);
        await store.createUserWithIdentity(second, { ...identity, provider: 'forge', userId: second.id });
        assert.equal((await store.getUserByIdentity(identity))?.id, first.id);
        assert.equal((await store.getUserByIdentity({ ...identity, provider: 'forge' }))?.id, second.id);
      });

      it('a taken username or identity is a conflict, and nothing is half-written', async () => {
        const first = makeUser({ passwordHash: null });
        const identity = identityOf(first);
        await store.createUserWithIdentity(first, identity);
        const second = makeUser({ passwordHash: null });
        await assert.rejects(store.createUserWithIdentity(second, { ...identity, userId: second.id }), StoreConflictError);
        assert.equal(await store.getUserById(second.id), undefined);
        await assert.rejects(store.createUserWithIdentity({ ...second, username: first.username }, identityOf(second)), StoreConflictError);
        assert.equal(await store.getUserById(second.id), undefined);
        assert.equal((await store.listUserIdentities({ userId: second.id })).length, 0);
      });

      it('an interaction keeps the provider chosen', async () => {
        const client = makeClient();
        await store.createClient(client);
        const interaction = makeInteraction(client.clientId);
        await store.createInteraction(interaction);
        const upstream = { provider: 'corp', sealedPending: 'v1.k.n.b' };
        await store.setInteractionUpstream(interaction.id, upstream);
        assert.deepEqual((await store.getInteraction(interaction.id, NOW))?.upstream, upstream);
        assert.deepEqual((await store.consumeInteraction(interaction.id, NOW))?.upstream, upstream);
      });

      it('an upstream session, its tokens replaced; sessions and grants rest on it', async () => {
        const { client, user } = await seed();
        const upstream = upstreamSessionOf(user);
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

      it('deleting the user deletes their identities and upstream sessions', async () => {
        const user = makeUser({ passwordHash: null });
        await store.createUserWithIdentity(user, identityOf(user));
        const upstream = upstreamSessionOf(user);
        await store.createUpstreamSession(upstream);
        assert.equal(await store.deleteUser(user.username), true);
        assert.equal(await store.getUpstreamSession(upstream.id), undefined);
        assert.deepEqual(await store.listUserIdentities({ userId: user.id }), []);
      });

      it('sweeping removes an expired upstream session only once nothing rests on it', async () => {
        const { client, user } = await seed();
        const kept = upstreamSessionOf(user, { expiresAt: NOW - 1 });
        const gone = upstreamSessionOf(user, { expiresAt: NOW - 1 });
        await store.createUpstreamSession(kept);
        await store.createUpstreamSession(gone);
        const grant = makeGrant(client.clientId, user.id, { upstreamSessionId: kept.id });
        await store.createGrant(grant);
        await saveRefreshToken(makeRefreshToken(grant));
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
        const listed = await store.listClients();
        listed[0]?.grantTypes.push('client_credentials');
        assert.deepEqual(await store.getClient(client.clientId), client);

        const fetchedGrant = await store.getGrant(grant.id);
        assert.ok(fetchedGrant);
        fetchedGrant.scope.push('admin');
        fetchedGrant.revokedAt = NOW;
        assert.deepEqual(await store.getGrant(grant.id), grant);

        const fetchedUser = await store.getUserById(user.id);
        assert.ok(fetchedUser);
        fetchedUser.username = 'mallory';
        assert.deepEqual(await store.getUserByUsername(user.username), user);

        const interaction = makeInteraction(client.clientId);
        await store.createInteraction(interaction);
        const fetchedInteraction = await store.getInteraction(interaction.id, NOW);
        assert.ok(fetchedInteraction);
        fetchedInteraction.request.scope.push('admin');
        assert.deepEqual(await store.getInteraction(interaction.id, NOW), interaction);

        await store.saveConsent(makeConsent(user.id, client.clientId));
        const consents = await store.listConsents({});
        consents[0]?.scope.push('admin');
        assert.deepEqual((await store.getConsent(user.id, client.clientId, 'https://mcp.example/'))?.scope, ['read']);
      });

      it('mutating a consume or rotate result does not change the store', async () => {
        const { grant } = await seed();
        const code = makeCode(grant);
        await store.saveAuthorizationCode(code);
        const used = expectRecord(await store.consumeAuthorizationCode(code.codeHash, NOW), 'ok');
        used.consumedAt = null;
        used.scope.push('admin');
        expectRecord(await store.consumeAuthorizationCode(code.codeHash, NOW), 'replayed');

        const token = makeRefreshToken(grant);
        await saveRefreshToken(token);
        const next = makeRefreshToken(grant);
        expectRecord(await rotate(token.tokenHash, next, NOW), 'ok');
        (await store.getRefreshToken(next.tokenHash))!.scope.push('admin');
        assert.deepEqual((await store.getRefreshToken(next.tokenHash))?.scope, next.scope);
        (await store.findSpentRefreshToken(token.tokenHash))!.spentAt = 0;
        assert.equal((await store.findSpentRefreshToken(token.tokenHash))?.spentAt, NOW);

        const key = makeSigningKey();
        const ensured = await store.ensureSigningKey(key);
        ensured.status = 'retired';
        assert.equal((await store.listSigningKeys())[0]?.status, 'current');
      });
    });
  });
}
