/**
 * Records for the store suite: valid records with unique ids (override what a test cares about),
 * and the few steps that put them in a store through the core contract alone.
 */
import { hashSecret } from '../../core/secrets.js';
import type {
  AuditEventRecord,
  AuthorizationCodeRecord,
  ClientRecord,
  ConsentRecord,
  DeviceAuthorizationRecord,
  GrantRecord,
  InteractionRecord,
  RefreshRequest,
  RefreshTokenRecord,
  RepeatRefreshRequest,
  SessionRecord,
  SigningKeyRecord,
  Store,
  UpstreamSessionRecord,
  UserIdentityRecord,
  UserRecord,
} from '../store.js';

/** The tests' clock: whole seconds, passed to every time-dependent method. */
export const NOW = 1_700_000_000;

let counter = 0;
export const uniqueId = (prefix: string): string => `${prefix}-${++counter}`;

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

/** A stored audit event: a sign-in at NOW, with no field but its name and outcome. */
export function makeAuditEvent(overrides: Partial<AuditEventRecord> = {}): AuditEventRecord {
  return {
    occurredAt: NOW * 1000,
    event: 'login',
    outcome: 'success',
    reason: null,
    clientId: null,
    userId: null,
    grantId: null,
    address: null,
    provider: null,
    details: null,
    ...overrides,
  };
}

export function makeUser(overrides: Partial<UserRecord> = {}): UserRecord {
  const id = uniqueId('user');
  return { id, username: `name-of-${id}`, passwordHash: 'scrypt$hash', createdAt: NOW, admin: null, lastSignInAt: null, ...overrides };
}

export function makeIdentity(user: UserRecord, overrides: Partial<UserIdentityRecord> = {}): UserIdentityRecord {
  return {
    issuer: 'https://idp.example',
    subject: uniqueId('sub'),
    provider: 'corp',
    userId: user.id,
    email: 'person@example.com',
    name: 'A Person',
    createdAt: NOW,
    ...overrides,
  };
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
    device: null,
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
    nonce: null,
    createdAt: NOW,
    expiresAt: NOW + 60,
    consumedAt: null,
    ...overrides,
  };
}

export function makeDeviceAuthorization(clientId: string, overrides: Partial<DeviceAuthorizationRecord> = {}): DeviceAuthorizationRecord {
  return {
    deviceCodeHash: hashSecret(uniqueId('device')),
    userCodeHash: hashSecret(uniqueId('user-code')),
    clientId,
    scope: ['read'],
    resource: 'https://mcp.example/',
    interval: 5,
    lastPolledAt: null,
    status: 'pending',
    createdAt: NOW,
    expiresAt: NOW + 600,
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
  return {
    id: uniqueId('upstream'),
    userId,
    provider: 'corp',
    subject: 'sub-1',
    sealedTokens: 'v1.key.nonce.body',
    createdAt: NOW,
    expiresAt: NOW + 3600,
    ...overrides,
  };
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

/**
 * A retry by `successor`'s client of the refresh that spent `oldHash`, naming `successor` among
 * the hashes it may have, allowed for tokens spent after `spentAfter`; its access token expiring
 * 600 s after `now`.
 */
export function repeatOf(
  oldHash: string,
  successor: RefreshTokenRecord,
  now: number,
  spentAfter: number,
  overrides: Partial<RepeatRefreshRequest> = {},
): RepeatRefreshRequest {
  return {
    tokenHash: oldHash,
    clientId: successor.clientId,
    successorHashes: [successor.tokenHash],
    spentAfter,
    accessExpiresAt: now + 600,
    now,
    upstreamChecked: true,
    ...overrides,
  };
}

/** Saves a user through the core contract: one who signs in upstream, with an identity of their own. */
export async function addUser(store: Store, user: UserRecord = makeUser()): Promise<UserRecord> {
  await store.createUserWithIdentity(user, makeIdentity(user));
  return user;
}

/** Saves a new client and user, and a grant of theirs (with `code` when given): what most tests of grants start from. */
export async function addGrant(store: Store): Promise<{ grant: GrantRecord }>;
export async function addGrant(
  store: Store,
  code: (grant: GrantRecord) => AuthorizationCodeRecord,
): Promise<{ grant: GrantRecord; code: AuthorizationCodeRecord }>;
export async function addGrant(
  store: Store,
  code?: (grant: GrantRecord) => AuthorizationCodeRecord,
): Promise<{ grant: GrantRecord; code?: AuthorizationCodeRecord }> {
  const client = makeClient();
  await store.createClient(client);
  const user = await addUser(store);
  const grant = makeGrant(client.clientId, user.id);
  const made = code?.(grant);
  await store.createGrant(grant, made);
  return made ? { grant, code: made } : { grant };
}

/**
 * Saves `grant` with a code and redeems the code at `options.at` (NOW unless given), issuing
 * `token` and an access token expiring at `options.accessExpiresAt` (0 unless given): the
 * contract's one way to issue a family's first refresh token. Returns the (now used) code.
 */
export async function issueFirstToken(
  store: Store,
  grant: GrantRecord,
  token: RefreshTokenRecord = makeRefreshToken(grant),
  options: { accessExpiresAt?: number; at?: number; code?: Partial<AuthorizationCodeRecord> } = {},
): Promise<AuthorizationCodeRecord> {
  const at = options.at ?? NOW;
  const code = makeCode(grant, { createdAt: at, expiresAt: at + 60, ...options.code });
  await store.createGrant(grant, code);
  const issue = { accessExpiresAt: options.accessExpiresAt ?? 0, refreshToken: token };
  const result = await store.redeemAuthorizationCode(code.codeHash, at, () => issue);
  if (result.status !== 'ok') throw new Error(`the code of a new grant was not redeemed: ${result.status}`);
  return { ...code, consumedAt: at };
}
