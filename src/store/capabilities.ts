/**
 * The methods of the contract, aggregate by aggregate, and which optional capabilities a store
 * has, told by the methods it carries: the server asks here before using one, and does without it
 * otherwise. A capability is all of its methods or none; a store with only some of them is a
 * mistake in that store, reported as soon as it is asked about.
 */
import type {
  AuditEventStore,
  ClientStore,
  DeviceAuthorizationStore,
  FullStore,
  GrantStore,
  InteractionStore,
  KeyStore,
  LegacyRefreshRetryStore,
  PeopleStore,
  RateBucketStore,
  RefreshRetryStore,
  RefreshWithAssertionStore,
  ReplayStore,
  RevocationFeedStore,
  SessionStore,
  SignOutStore,
  Store,
  StoreAdministration,
  StoreConsole,
  StoreUpkeep,
} from './store.js';

export type StoreAggregate = 'clients' | 'people' | 'interactions' | 'sessions' | 'grants' | 'replay' | 'keys';

/** The core contract's methods (close aside), by aggregate: every store has all of them. */
export const CORE_METHODS = {
  clients: ['createClient', 'getClient', 'saveClient'] as const satisfies readonly (keyof ClientStore)[],
  people: ['getUser', 'createUserWithIdentity', 'listUserIdentities', 'getConsent', 'saveConsent'] as const satisfies readonly (keyof PeopleStore)[],
  interactions: ['createInteraction', 'getInteraction', 'updateInteraction', 'consumeInteraction'] as const satisfies readonly (keyof InteractionStore)[],
  sessions: [
    'createSession',
    'getSession',
    'createUpstreamSession',
    'getUpstreamSession',
    'updateUpstreamSessionTokens',
  ] as const satisfies readonly (keyof SessionStore)[],
  grants: [
    'createGrant',
    'getGrant',
    'revokeGrant',
    'redeemAuthorizationCode',
    'getRefreshToken',
    'findSpentRefreshToken',
    'refreshGrant',
    'revokeAccessToken',
    'isAccessTokenRevoked',
  ] as const satisfies readonly (keyof GrantStore)[],
  replay: ['useAssertionId'] as const satisfies readonly (keyof ReplayStore)[],
  keys: ['listSigningKeys', 'ensureSigningKey'] as const satisfies readonly (keyof KeyStore)[],
} satisfies Record<StoreAggregate, readonly string[]>;

export type StoreCapability =
  | 'deviceAuthorization'
  | 'signOut'
  | 'refreshRetry'
  | 'refreshWithAssertion'
  | 'upkeep'
  | 'rateBuckets'
  | 'revocationFeed'
  | 'administration'
  | 'console'
  | 'auditEvents';

/** The methods each capability consists of (an optional one, watchRevocations, is not required). */
export const CAPABILITY_METHODS = {
  deviceAuthorization: [
    'createDeviceAuthorization',
    'findPendingDeviceAuthorization',
    'approveDeviceAuthorization',
    'denyDeviceAuthorization',
    'pollDeviceAuthorization',
  ] as const satisfies readonly (keyof DeviceAuthorizationStore)[],
  signOut: ['deleteSession'] as const satisfies readonly (keyof SignOutStore)[],
  refreshRetry: ['repeatRefresh'] as const satisfies readonly (keyof RefreshRetryStore)[],
  refreshWithAssertion: ['refreshGrantWithAssertion'] as const satisfies readonly (keyof RefreshWithAssertionStore)[],
  upkeep: ['touchClient', 'sweepExpired'] as const satisfies readonly (keyof StoreUpkeep)[],
  rateBuckets: ['takeRateTokens'] as const satisfies readonly (keyof RateBucketStore)[],
  revocationFeed: ['listRevocations'] as const satisfies readonly (keyof RevocationFeedStore)[],
  administration: [
    'listClients',
    'deleteClient',
    'createUser',
    'listUsers',
    'deleteUser',
    'setUserPassword',
    'listConsents',
    'revokeConsents',
    'rotateSigningKey',
  ] as const satisfies readonly (keyof StoreAdministration)[],
  console: ['listClientsPage', 'listUsersPage', 'setUserAdmin', 'endUserSessions'] as const satisfies readonly (keyof StoreConsole)[],
  auditEvents: ['recordAuditEvents', 'listAuditEvents'] as const satisfies readonly (keyof AuditEventStore)[],
} satisfies Record<StoreCapability, readonly string[]>;

// The lists above name every method: one added to an interface and not listed fails to compile here, by name.
type Unlisted<Interface, Listed extends readonly string[]> = Exclude<keyof Interface, Listed[number]>;
type Check<Missing> = [Missing] extends [never] ? true : Missing;
const everyMethodListed: Check<
  | Unlisted<Omit<Store, 'close' | 'sharedByReplicas'>, (typeof CORE_METHODS)[StoreAggregate]>
  | Unlisted<
      DeviceAuthorizationStore & SignOutStore & RefreshRetryStore & RefreshWithAssertionStore & StoreUpkeep & RateBucketStore,
      (typeof CAPABILITY_METHODS)[StoreCapability]
    >
  | Unlisted<Omit<RevocationFeedStore, 'watchRevocations'> & StoreAdministration & StoreConsole & AuditEventStore, (typeof CAPABILITY_METHODS)[StoreCapability]>
> = true;
void everyMethodListed;

/** What was found of each store, asked about on hot paths (every token request): a store's methods do not change. */
const known = new WeakMap<Store, Partial<Record<StoreCapability, boolean>>>();

function has(store: Store, capability: StoreCapability): boolean {
  let found = known.get(store);
  if (found === undefined) known.set(store, (found = {}));
  return (found[capability] ??= inspect(store, capability));
}

const isMethod = (store: Store, name: string): boolean => typeof (store as unknown as Record<string, unknown>)[name] === 'function';

function inspect(store: Store, capability: StoreCapability): boolean {
  const methods: readonly string[] = CAPABILITY_METHODS[capability];
  const present = methods.filter((method) => isMethod(store, method));
  if (present.length === 0) return false;
  if (present.length === methods.length) return true;
  const missing = methods.filter((method) => !present.includes(method));
  throw new TypeError(`the store has ${present.join(', ')} but not ${missing.join(', ')}: its ${capability} capability needs every one of them, or none`);
}

export const hasDeviceAuthorization = (store: Store): store is Store & DeviceAuthorizationStore => has(store, 'deviceAuthorization');
export const hasSignOut = (store: Store): store is Store & SignOutStore => has(store, 'signOut');
export const hasRefreshRetry = (store: Store): store is Store & RefreshRetryStore => has(store, 'refreshRetry');
export const hasRefreshWithAssertion = (store: Store): store is Store & RefreshWithAssertionStore => has(store, 'refreshWithAssertion');
export const hasUpkeep = (store: Store): store is Store & StoreUpkeep => has(store, 'upkeep');
export const hasRateBuckets = (store: Store): store is Store & RateBucketStore => has(store, 'rateBuckets');
export const hasRevocationFeed = (store: Store): store is Store & RevocationFeedStore => has(store, 'revocationFeed');
export const hasAdministration = (store: Store): store is Store & StoreAdministration => has(store, 'administration');
export const hasConsole = (store: Store): store is Store & StoreConsole => has(store, 'console');
export const hasAuditEvents = (store: Store): store is Store & AuditEventStore => has(store, 'auditEvents');

/** A store written before repeatRefresh, with the retry it replaced (not a capability: no store of this package has it). */
export const hasLegacyRefreshRetry = (store: Store): store is Store & LegacyRefreshRetryStore => isMethod(store, 'retryRefresh');

/** The capabilities the store has. */
export function capabilitiesOf(store: Store): StoreCapability[] {
  return (Object.keys(CAPABILITY_METHODS) as StoreCapability[]).filter((capability) => has(store, capability));
}

export const isFullStore = (store: Store): store is FullStore => capabilitiesOf(store).length === Object.keys(CAPABILITY_METHODS).length;
