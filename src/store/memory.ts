/**
 * The in-memory store, for unit tests. It keeps the SQLite store's semantics, foreign keys and
 * cascades included, so a test that passes here does not fail against a real database.
 * Every method body is synchronous (no await), so each check-and-write is atomic by construction.
 * Records are copied in and out, so callers cannot change stored state by mutating them.
 */
import {
  StoreError,
  type AuditEventRecord,
  type AuthorizationCodeRecord,
  type ConsumeResult,
  type ClientRecord,
  type ConsentRecord,
  type DeviceAuthorizationRecord,
  type GrantRecord,
  type InteractionRecord,
  type RefreshRequest,
  type RefreshResult,
  type RefreshTokenRecord,
  type RateTokensResult,
  type RevocationRecord,
  type SessionRecord,
  type SpentRefreshTokenRecord,
  type SigningKeyRecord,
  type FullStore,
  type UpstreamSessionRecord,
  type IdentityKey,
  type UserIdentityRecord,
  type UserRecord,
  type Store,
} from './store.js';
import type { RecordKind, StoreProbes } from './testing/probes.js';
import { CLIENT_USE_GRANULARITY, REVOCATION_MARGIN, devicePoll, explainConsumeFailure, explainRefreshFailure, spentKey, systemNow } from './internal.js';
import { bucketParams, bucketResult, takeFromBucket, type BucketRow } from './rate-buckets.js';

const copy = <T>(value: T): T => structuredClone(value);

/** Byte-order comparison, like SQLite's default collation (localeCompare would differ). */
const compare = (a: string | number, b: string | number): number => (a < b ? -1 : a > b ? 1 : 0);

function insert<T>(map: Map<string, T>, key: string, value: T, what: string): void {
  if (map.has(key)) throw new StoreError('conflict', `${what} already exists: ${key}`);
  map.set(key, copy(value));
}

/** What SQLite's foreign keys do: refuse a row that points at nothing. */
function requireRef(map: Map<string, unknown>, key: string | null, what: string): void {
  if (key !== null && !map.has(key)) throw new Error(`foreign key violation: no ${what} ${key}`);
}

function deleteWhere<T>(map: Map<string, T>, predicate: (value: T) => boolean): number {
  let count = 0;
  for (const [key, value] of map) {
    if (predicate(value)) {
      map.delete(key);
      count++;
    }
  }
  return count;
}

/** A user as the SQL stores give it back: not an administrator and never signed in, unless said. */
const withUserDefaults = (user: UserRecord): UserRecord => ({ ...user, admin: user.admin ?? null, lastSignInAt: user.lastSignInAt ?? null });

/** Whether a key or name contains the search, in any case (no search: everything). */
function searchMatcher(search: string | undefined): (text: string) => boolean {
  const wanted = search?.trim().toLowerCase();
  return wanted ? (text) => text.toLowerCase().includes(wanted) : () => true;
}

const consentKey = (userId: string, clientId: string, resource: string): string => JSON.stringify([userId, clientId, resource]);

export function createMemoryStore(): FullStore {
  const clients = new Map<string, ClientRecord>();
  const users = new Map<string, UserRecord>();
  const interactions = new Map<string, InteractionRecord>();
  const sessions = new Map<string, SessionRecord>();
  const consents = new Map<string, ConsentRecord>();
  const grants = new Map<string, GrantRecord>();
  const codes = new Map<string, AuthorizationCodeRecord>();
  const deviceAuthorizations = new Map<string, DeviceAuthorizationRecord>();
  const refreshTokens = new Map<string, RefreshTokenRecord>();
  // By spentKey; like the SQL table, not removed with the grant (it expires on its own). The
  // successor is kept by its spentKey too.
  const spentTokens = new Map<string, Omit<SpentRefreshTokenRecord, 'clientId' | 'successorUnused'> & { successorKey: string }>();
  const identities = new Map<string, UserIdentityRecord>();
  const upstreamSessions = new Map<string, UpstreamSessionRecord>();
  const revocations = new Map<string, RevocationRecord>();
  let auditEvents: AuditEventRecord[] = [];
  let auditSeq = 0;
  // Insertion order breaks ties between keys created in the same second.
  const signingKeys: SigningKeyRecord[] = [];
  const rateBuckets = new Map<string, BucketRow>();
  /** Used JWT assertions by key, with when each record may go. */
  const usedAssertions = new Map<string, { expiresAt: number }>();

  /** The device authorization, if it is pending and unexpired at `now`. */
  const pendingDevice = (deviceCodeHash: string, now: number): DeviceAuthorizationRecord | undefined => {
    const device = deviceAuthorizations.get(deviceCodeHash);
    return device && device.status === 'pending' && device.expiresAt > now ? device : undefined;
  };

  /** Deletes grants and, like ON DELETE CASCADE, their codes and tokens. */
  const deleteGrants = (predicate: (grant: GrantRecord) => boolean): void => {
    for (const grant of [...grants.values()].filter(predicate)) {
      grants.delete(grant.id);
      const ofGrant = (row: { grantId: string }): boolean => row.grantId === grant.id;
      deleteWhere(codes, ofGrant);
      deleteWhere(refreshTokens, ofGrant);
    }
  };

  /** Deletes upstream sessions and, like ON DELETE CASCADE, the browser sessions and grants resting on them. */
  const deleteUpstreamSessions = (predicate: (session: UpstreamSessionRecord) => boolean): number => {
    let count = 0;
    for (const session of [...upstreamSessions.values()].filter(predicate)) {
      upstreamSessions.delete(session.id);
      deleteWhere(sessions, (s) => s.upstreamSessionId === session.id);
      deleteGrants((g) => g.upstreamSessionId === session.id);
      count++;
    }
    return count;
  };
  const identityKey = (key: IdentityKey): string => JSON.stringify([key.provider, key.issuer, key.subject]);

  /** Records a revocation, as the SQL stores do: only while a token it affects is unexpired, never twice. */
  const recordRevocation = (kind: RevocationRecord['kind'], id: string, now: number, expiresAt: number): void => {
    const key = `${kind}:${id}`;
    if (expiresAt > now && !revocations.has(key)) revocations.set(key, { kind, id, revokedAt: now, expiresAt });
  };
  /** Revokes the standing grants that match, recording each until the latest expiry of its access tokens. */
  const revokeGrantsWhere = (predicate: (grant: GrantRecord) => boolean, now: number): void => {
    for (const grant of grants.values()) {
      if (grant.revokedAt !== null || !predicate(grant)) continue;
      grant.revokedAt = now;
      recordRevocation('grant', grant.id, now, grant.accessExpiresAt ?? 0);
    }
  };
  /** Raises a standing grant's accessExpiresAt (as the SQL UPDATE does); false when it is revoked or gone. */
  const raiseAccessExpiry = (grant: GrantRecord | undefined, accessExpiresAt: number): grant is GrantRecord => {
    if (!grant || grant.revokedAt !== null) return false;
    grant.accessExpiresAt = Math.max(grant.accessExpiresAt ?? 0, accessExpiresAt);
    return true;
  };

  /** Deletes the client and, like ON DELETE CASCADE, its interactions, consents and grants. */
  const removeClient = (clientId: string): boolean => {
    if (!clients.delete(clientId)) return false;
    deleteWhere(interactions, (i) => i.clientId === clientId);
    deleteWhere(consents, (c) => c.clientId === clientId);
    deleteWhere(deviceAuthorizations, (d) => d.clientId === clientId);
    deleteGrants((g) => g.clientId === clientId);
    return true;
  };

  /** The live token of the grant whose hash has the successor's key, if any. */
  const findSuccessor = (grantId: string, successorKey: string): RefreshTokenRecord | undefined =>
    [...refreshTokens.values()].find((t) => t.grantId === grantId && spentKey(t.tokenHash) === successorKey);

  /** A spent record, with its grant's client and whether its successor is unused, while the grant exists (the SQL join). */
  const findSpent = (tokenHash: string): SpentRefreshTokenRecord | undefined => {
    const spent = spentTokens.get(spentKey(tokenHash));
    const grant = spent && grants.get(spent.grantId);
    if (!spent || !grant) return undefined;
    const { successorKey, ...record } = spent;
    return { ...record, clientId: grant.clientId, successorUnused: findSuccessor(spent.grantId, successorKey) !== undefined };
  };

  /** A refresh (refreshGrant), synchronous: nothing else runs between its checks and its writes. */
  function rotateRefreshToken(request: RefreshRequest): RefreshResult {
    const { tokenHash, clientId, next, now } = request;
    const old = refreshTokens.get(tokenHash);
    const grant = old && grants.get(old.grantId);
    const usable =
      old !== undefined &&
      old.clientId === clientId &&
      old.expiresAt > now &&
      grant !== undefined &&
      grant.revokedAt === null &&
      (grant.upstreamSessionId === null || request.upstreamChecked);
    if (!usable) return explainRefreshFailure(request, copy(old), copy(grant), old ? undefined : findSpent(tokenHash));
    if (refreshTokens.has(next.tokenHash)) throw new StoreError('conflict', `refresh token already exists: ${next.tokenHash}`);
    raiseAccessExpiry(grant, request.accessExpiresAt);
    refreshTokens.delete(tokenHash);
    const key = spentKey(tokenHash);
    if (!spentTokens.has(key)) spentTokens.set(key, { grantId: old.grantId, spentAt: now, expiresAt: old.expiresAt, successorKey: spentKey(next.tokenHash) });
    refreshTokens.set(next.tokenHash, { ...next, grantId: old.grantId, clientId: old.clientId, scope: [...old.scope] });
    return { status: 'ok', grant: copy(grant), scope: [...old.scope] };
  }

  /** Whether a record of the assertion is kept at `now` (useAssertionId). */
  const assertionKept = (key: string, now: number): boolean => (usedAssertions.get(key)?.expiresAt ?? -Infinity) > now;

  const findUserByUsername = (username: string): UserRecord | undefined => [...users.values()].find((user) => user.username === username);

  /** Every check createGrant makes before its first insert, so a refusal leaves nothing (as the SQL transaction). */
  function checkGrant(grant: GrantRecord, code?: AuthorizationCodeRecord): void {
    requireRef(clients, grant.clientId, 'client');
    requireRef(users, grant.userId, 'user');
    requireRef(upstreamSessions, grant.upstreamSessionId, 'upstream session');
    if (code && code.grantId !== grant.id) requireRef(grants, code.grantId, 'grant');
    if (grants.has(grant.id)) throw new StoreError('conflict', `grant already exists: ${grant.id}`);
    if (code && codes.has(code.codeHash)) throw new StoreError('conflict', `authorization code already exists: ${code.codeHash}`);
  }
  function saveGrant(grant: GrantRecord, code?: AuthorizationCodeRecord): void {
    if (code) codes.set(code.codeHash, copy(code));
    grants.set(grant.id, copy({ ...grant, accessExpiresAt: grant.accessExpiresAt ?? null }));
  }

  function consumeCode(codeHash: string, now: number): ConsumeResult<AuthorizationCodeRecord> | { status: 'revoked'; record: AuthorizationCodeRecord } {
    const code = codes.get(codeHash);
    const grantRevoked = code !== undefined && (grants.get(code.grantId)?.revokedAt ?? null) !== null;
    if (!code || code.consumedAt !== null || code.expiresAt <= now || grantRevoked) return explainConsumeFailure(copy(code), now);
    code.consumedAt = now;
    return { status: 'ok', record: copy(code) };
  }

  function issueUnder(grantId: string, accessExpiresAt: number, refreshToken?: RefreshTokenRecord): void {
    // Validate the insert first, as the SQL transaction would roll back.
    if (refreshToken) {
      requireRef(grants, refreshToken.grantId, 'grant');
      if (refreshTokens.has(refreshToken.tokenHash)) throw new StoreError('conflict', `refresh token already exists: ${refreshToken.tokenHash}`);
    }
    const grant = grants.get(grantId);
    if (!grant) return;
    grant.accessExpiresAt = Math.max(grant.accessExpiresAt ?? 0, accessExpiresAt);
    if (grant.revokedAt !== null) {
      const recorded = revocations.get(`grant:${grantId}`);
      if (!recorded) recordRevocation('grant', grantId, grant.revokedAt, accessExpiresAt);
      else recorded.expiresAt = Math.max(recorded.expiresAt, accessExpiresAt);
    }
    if (refreshToken) refreshTokens.set(refreshToken.tokenHash, copy(refreshToken));
  }

  const store: FullStore = {
    async close() {},

    async createClient(client) {
      insert(clients, client.clientId, client, 'client');
    },
    async saveClient(client) {
      const existing = clients.get(client.clientId);
      clients.set(client.clientId, {
        ...copy(client),
        createdAt: existing?.createdAt ?? client.createdAt,
        lastUsedAt: existing?.lastUsedAt ?? client.lastUsedAt,
      });
    },
    async touchClient(clientId, now) {
      const client = clients.get(clientId);
      if (client && (client.lastUsedAt === null || client.lastUsedAt <= now - CLIENT_USE_GRANULARITY)) client.lastUsedAt = now;
    },
    async getClient(clientId) {
      return copy(clients.get(clientId));
    },
    async listClientsPage(query) {
      const matches = searchMatcher(query.search);
      return [...clients.values()]
        .filter((c) => c.clientId > (query.after ?? '') && (matches(c.clientId) || matches(c.clientName ?? '')))
        .sort((a, b) => compare(a.clientId, b.clientId))
        .slice(0, query.limit)
        .map(copy);
    },
    async listClients() {
      return [...clients.values()].sort((a, b) => compare(a.createdAt, b.createdAt) || compare(a.clientId, b.clientId)).map(copy);
    },
    async deleteClient(clientId, now = systemNow()) {
      revokeGrantsWhere((g) => g.clientId === clientId, now);
      return removeClient(clientId);
    },

    async createUser(user) {
      if (findUserByUsername(user.username)) throw new StoreError('conflict', `username already taken: ${user.username}`);
      insert(users, user.id, withUserDefaults(user), 'user');
    },
    async getUser(key) {
      if ('id' in key) return copy(users.get(key.id));
      if ('username' in key) return copy(findUserByUsername(key.username));
      const identity = identities.get(identityKey(key.identity));
      return identity ? copy(users.get(identity.userId)) : undefined;
    },
    async listUsers() {
      return [...users.values()].sort((a, b) => compare(a.username, b.username)).map(copy);
    },
    async listUsersPage(query) {
      const matches = searchMatcher(query.search);
      return [...users.values()]
        .filter((u) => u.username > (query.after ?? '') && matches(u.username))
        .sort((a, b) => compare(a.username, b.username))
        .slice(0, query.limit)
        .map(copy);
    },
    async setUserAdmin(username, admin) {
      const user = findUserByUsername(username);
      if (user) user.admin = admin;
      return user !== undefined;
    },
    async endUserSessions(userId) {
      deleteWhere(interactions, (i) => i.userId === userId);
      return deleteWhere(sessions, (s) => s.userId === userId);
    },
    async deleteUser(username, now = systemNow()) {
      const user = findUserByUsername(username);
      if (!user) return false;
      revokeGrantsWhere((g) => g.userId === user.id, now);
      users.delete(user.id);
      deleteWhere(interactions, (i) => i.userId === user.id);
      deleteWhere(sessions, (s) => s.userId === user.id);
      deleteWhere(consents, (c) => c.userId === user.id);
      deleteGrants((g) => g.userId === user.id);
      deleteWhere(identities, (i) => i.userId === user.id);
      deleteUpstreamSessions((s) => s.userId === user.id);
      return true;
    },
    async setUserPassword(username, passwordHash) {
      const user = findUserByUsername(username);
      if (!user) return undefined;
      users.set(user.id, { ...user, passwordHash });
      const sessionsEnded = deleteWhere(sessions, (s) => s.userId === user.id);
      deleteWhere(interactions, (i) => i.userId === user.id);
      return { sessionsEnded };
    },
    async createUserWithIdentity(user, identity) {
      const key = identityKey(identity);
      if (findUserByUsername(user.username)) throw new StoreError('conflict', `username already taken: ${user.username}`);
      if (identities.has(key)) throw new StoreError('conflict', `identity already linked: ${key}`);
      if (identity.userId !== user.id) throw new Error(`foreign key violation: no user ${identity.userId}`);
      insert(users, user.id, withUserDefaults(user), 'user');
      identities.set(key, copy(identity));
    },
    async listUserIdentities(filter = {}) {
      return [...identities.values()]
        .filter((i) => filter.userId === undefined || i.userId === filter.userId)
        .sort((a, b) => compare(a.userId, b.userId) || compare(a.provider, b.provider) || compare(a.issuer, b.issuer) || compare(a.subject, b.subject))
        .map(copy);
    },

    async createInteraction(interaction) {
      requireRef(clients, interaction.clientId, 'client');
      requireRef(users, interaction.userId, 'user');
      insert(interactions, interaction.id, interaction, 'interaction');
    },
    async getInteraction(id, now) {
      const interaction = interactions.get(id);
      return interaction && interaction.expiresAt > now ? copy(interaction) : undefined;
    },
    async updateInteraction(id, change) {
      const interaction = interactions.get(id);
      if (!interaction) return;
      if ('userId' in change) {
        requireRef(users, change.userId, 'user');
        interaction.userId = change.userId;
      } else interaction.upstream = copy(change.upstream);
    },
    async consumeInteraction(id, now) {
      const interaction = interactions.get(id);
      if (!interaction || interaction.expiresAt <= now) return undefined;
      interactions.delete(id);
      return copy(interaction);
    },

    async createSession(session) {
      requireRef(users, session.userId, 'user');
      requireRef(upstreamSessions, session.upstreamSessionId, 'upstream session');
      insert(sessions, session.idHash, session, 'session');
      users.get(session.userId)!.lastSignInAt = session.createdAt;
    },
    async getSession(idHash, now) {
      const session = sessions.get(idHash);
      return session && session.expiresAt > now ? copy(session) : undefined;
    },
    async deleteSession(idHash) {
      sessions.delete(idHash);
    },

    async createUpstreamSession(session) {
      requireRef(users, session.userId, 'user');
      insert(upstreamSessions, session.id, session, 'upstream session');
    },
    async getUpstreamSession(id) {
      return copy(upstreamSessions.get(id));
    },
    async updateUpstreamSessionTokens(id, sealedTokens) {
      const session = upstreamSessions.get(id);
      if (session) session.sealedTokens = sealedTokens;
    },

    async getConsent(userId, clientId, resource) {
      return copy(consents.get(consentKey(userId, clientId, resource)));
    },
    async saveConsent(consent) {
      requireRef(users, consent.userId, 'user');
      requireRef(clients, consent.clientId, 'client');
      const key = consentKey(consent.userId, consent.clientId, consent.resource);
      const existing = consents.get(key);
      const scope = [...new Set([...(existing?.scope ?? []), ...consent.scope])].sort();
      consents.set(key, { ...copy(consent), scope, createdAt: existing?.createdAt ?? consent.createdAt });
    },
    async listConsents(filter) {
      return [...consents.values()]
        .filter((c) => (filter.userId === undefined || c.userId === filter.userId) && (filter.clientId === undefined || c.clientId === filter.clientId))
        .sort((a, b) => compare(a.userId, b.userId) || compare(a.clientId, b.clientId) || compare(a.resource, b.resource))
        .map(copy);
    },
    async revokeConsents(userId, clientId, now) {
      const count = deleteWhere(consents, (c) => c.userId === userId && c.clientId === clientId);
      revokeGrantsWhere((g) => g.userId === userId && g.clientId === clientId, now);
      return count;
    },

    async createGrant(grant, code) {
      checkGrant(grant, code);
      saveGrant(grant, code);
    },
    async getGrant(id) {
      return copy(grants.get(id));
    },
    async revokeGrant(id, now) {
      revokeGrantsWhere((g) => g.id === id, now);
    },

    async redeemAuthorizationCode(codeHash, now, issue) {
      const result = consumeCode(codeHash, now);
      if (result.status !== 'ok') return result;
      try {
        const tokens = issue(result.record);
        if (tokens) issueUnder(result.record.grantId, tokens.accessExpiresAt, tokens.refreshToken);
      } catch (error) {
        codes.get(codeHash)!.consumedAt = null; // rolled back, as the SQL transaction would be
        throw error;
      }
      return result;
    },

    async createDeviceAuthorization(device) {
      requireRef(clients, device.clientId, 'client');
      if ([...deviceAuthorizations.values()].some((d) => d.userCodeHash === device.userCodeHash)) {
        throw new StoreError('conflict', `user code already exists: ${device.userCodeHash}`);
      }
      insert(deviceAuthorizations, device.deviceCodeHash, device, 'device authorization');
    },
    async findPendingDeviceAuthorization(userCodeHash, now) {
      const found = [...deviceAuthorizations.values()].find((d) => d.userCodeHash === userCodeHash);
      return found && pendingDevice(found.deviceCodeHash, now) ? copy(found) : undefined;
    },
    async approveDeviceAuthorization(deviceCodeHash, now, grant, code) {
      const device = pendingDevice(deviceCodeHash, now);
      if (!device) return false;
      const record = { ...code, codeHash: deviceCodeHash, expiresAt: device.expiresAt };
      checkGrant(grant, record);
      saveGrant(grant, record);
      device.status = 'approved';
      return true;
    },
    async denyDeviceAuthorization(deviceCodeHash, now) {
      const device = pendingDevice(deviceCodeHash, now);
      if (device) device.status = 'denied';
      return device !== undefined;
    },
    async pollDeviceAuthorization(deviceCodeHash, clientId, now) {
      const device = deviceAuthorizations.get(deviceCodeHash);
      if (!device) return { status: 'missing' };
      if (device.clientId !== clientId) return { status: 'foreign', record: copy(device) };
      const { result, changed } = devicePoll(copy(device), now);
      if (changed) Object.assign(device, changed);
      return result;
    },

    async getRefreshToken(tokenHash) {
      return copy(refreshTokens.get(tokenHash));
    },
    async findSpentRefreshToken(tokenHash) {
      return findSpent(tokenHash);
    },
    async refreshGrant(request) {
      return rotateRefreshToken(request);
    },
    async refreshGrantWithAssertion(request, assertion) {
      if (assertionKept(assertion.key, request.now)) return { status: 'assertion-used' };
      // The refresh first: one that throws keeps nothing, as a transaction rolled back.
      const result = rotateRefreshToken(request);
      usedAssertions.set(assertion.key, { expiresAt: assertion.expiresAt });
      return result;
    },
    async repeatRefresh(request) {
      const { tokenHash, clientId, now } = request;
      const spent = spentTokens.get(spentKey(tokenHash));
      const grant = spent && grants.get(spent.grantId);
      // The successor by its full hash, one of those asked for, and the one the record names.
      const successor =
        spent &&
        request.successorHashes
          .map((hash) => refreshTokens.get(hash))
          .find((t) => t !== undefined && t.grantId === spent.grantId && spentKey(t.tokenHash) === spent.successorKey);
      const usable =
        spent !== undefined &&
        spent.spentAt > request.spentAfter &&
        !refreshTokens.has(tokenHash) &&
        successor !== undefined &&
        successor.expiresAt > now &&
        grant !== undefined &&
        grant.clientId === clientId &&
        grant.revokedAt === null &&
        (grant.upstreamSessionId === null || request.upstreamChecked);
      if (!usable) {
        const live = refreshTokens.get(tokenHash);
        return explainRefreshFailure(request, copy(live), copy(live && grants.get(live.grantId)), live ? undefined : findSpent(tokenHash));
      }
      raiseAccessExpiry(grant, request.accessExpiresAt);
      return { status: 'ok', grant: copy(grant), scope: [...successor.scope], successorHash: successor.tokenHash };
    },

    async useAssertionId(key, expiresAt, now) {
      if (assertionKept(key, now)) return false;
      usedAssertions.set(key, { expiresAt });
      return true;
    },
    async revokeAccessToken(jti, expiresAt, now) {
      recordRevocation('token', jti, now, expiresAt);
    },
    async isAccessTokenRevoked(jti) {
      return revocations.has(`token:${jti}`);
    },
    async listRevocations(since, now) {
      return [...revocations.values()]
        .filter((r) => r.revokedAt >= since && r.expiresAt > now)
        .sort((a, b) => compare(a.revokedAt, b.revokedAt) || compare(a.kind, b.kind) || compare(a.id, b.id))
        .map(copy);
    },

    async listSigningKeys() {
      return [...signingKeys]
        .reverse()
        .sort((a, b) => b.createdAt - a.createdAt)
        .map(copy);
    },
    async rotateSigningKey(key) {
      if (signingKeys.some((k) => k.kid === key.kid)) throw new StoreError('conflict', `signing key already exists: ${key.kid}`);
      for (const k of signingKeys) {
        if (k.status === 'previous') k.status = 'retired';
        else if (k.status === 'current') k.status = 'previous';
      }
      signingKeys.push({ ...copy(key), status: 'current' });
    },
    async ensureSigningKey(key) {
      const current = signingKeys.find((k) => k.status === 'current');
      if (current) return copy(current);
      if (signingKeys.some((k) => k.kid === key.kid)) throw new StoreError('conflict', `signing key already exists: ${key.kid}`);
      const created: SigningKeyRecord = { ...copy(key), status: 'current' };
      signingKeys.push(created);
      return copy(created);
    },

    async takeRateTokens(request): Promise<RateTokensResult> {
      const p = bucketParams(request);
      const row = takeFromBucket(rateBuckets.get(p.key), p);
      rateBuckets.set(p.key, row);
      return bucketResult(row);
    },

    async recordAuditEvents(events) {
      for (const event of events) auditEvents.push({ ...copy(event), seq: ++auditSeq });
    },
    async listAuditEvents(query) {
      const found: AuditEventRecord[] = [];
      for (let i = auditEvents.length - 1; i >= 0 && found.length < query.limit; i--) {
        const e = auditEvents[i]!;
        if (query.beforeSeq !== undefined && e.seq! >= query.beforeSeq) continue;
        if (query.since !== undefined && e.occurredAt < query.since) break;
        const mismatch =
          (query.event !== undefined && e.event !== query.event) ||
          (query.outcome !== undefined && e.outcome !== query.outcome) ||
          (query.userId !== undefined && e.userId !== query.userId) ||
          (query.clientId !== undefined && e.clientId !== query.clientId) ||
          (query.address !== undefined && e.address !== query.address);
        if (!mismatch) found.push(copy(e));
      }
      return found;
    },

    async sweepExpired(now, options = {}) {
      // One synchronous pass: an abort can only come before it.
      if (options.signal?.aborted) return 0;
      const expired = (row: { expiresAt: number }): boolean => row.expiresAt <= now;
      const before = options.unusedClientsBefore;
      let count = 0;
      if (before !== undefined) {
        for (const client of [...clients.values()]) {
          if (client.registeredBy === 'dynamic' && (client.lastUsedAt ?? client.createdAt) < before) {
            removeClient(client.clientId);
            count++;
          }
        }
      }
      if (options.auditEventsBefore !== undefined) {
        const keep = auditEvents.filter((e) => e.occurredAt >= options.auditEventsBefore!);
        count += auditEvents.length - keep.length;
        auditEvents = keep;
      }
      count +=
        deleteWhere(codes, expired) + deleteWhere(deviceAuthorizations, expired) + deleteWhere(refreshTokens, expired) + deleteWhere(spentTokens, expired);
      count += deleteWhere(sessions, expired) + deleteWhere(interactions, expired) + deleteWhere(rateBuckets, expired) + deleteWhere(usedAssertions, expired);
      count += deleteWhere(revocations, (r) => r.expiresAt <= now - REVOCATION_MARGIN);
      const hasChildren = (grantId: string): boolean => [codes, refreshTokens].some((map) => [...map.values()].some((row) => row.grantId === grantId));
      count += deleteWhere(grants, (g) => g.createdAt < now - 60 && (g.accessExpiresAt ?? 0) <= now && !hasChildren(g.id));
      const restedOn = (id: string): boolean =>
        [...grants.values()].some((g) => g.upstreamSessionId === id) || [...sessions.values()].some((s) => s.upstreamSessionId === id);
      count += deleteUpstreamSessions((s) => s.expiresAt <= now && !restedOn(s.id));
      return count;
    },
  };
  const held: Record<RecordKind, { size: number } | unknown[]> = {
    clients,
    users,
    userIdentities: identities,
    consents,
    interactions,
    sessions,
    upstreamSessions,
    grants,
    authorizationCodes: codes,
    refreshTokens,
    spentRefreshTokens: spentTokens,
    deviceAuthorizations,
    usedAssertions,
    revocations,
    signingKeys,
  };
  counted.set(store, (kind) => {
    const records = held[kind];
    return Array.isArray(records) ? records.length : (records as { size: number }).size;
  });
  return store;
}

/** How many records of each kind each memory store holds. */
const counted = new WeakMap<Store, (kind: RecordKind) => number>();

/** The suite's probes of a memory store (context-auth/store/testing): how many records of a kind it holds. */
export function memoryStoreProbes(store: Store): StoreProbes {
  const count = counted.get(store);
  if (!count) throw new TypeError('not a memory store');
  return { countRecords: async (kind) => count(kind) };
}
