/**
 * Which optional capabilities a store has, told by the methods it carries: the server asks here
 * before using one, and does without it otherwise. A capability is all of its methods or none; a
 * store with only some of them is a mistake in that store, reported as soon as it is asked about.
 */
import type { AuditEventStore, FullStore, RateBucketStore, RevocationFeedStore, Store, StoreAdministration, StoreConsole, StoreUpkeep } from './store.js';

export type StoreCapability = 'upkeep' | 'rateBuckets' | 'revocationFeed' | 'administration' | 'console' | 'auditEvents';

/** The methods each capability consists of (an optional one, watchRevocations, is not required). */
export const CAPABILITY_METHODS: Readonly<Record<StoreCapability, readonly string[]>> = {
  upkeep: ['touchClient', 'sweepExpired'] satisfies (keyof StoreUpkeep)[],
  rateBuckets: ['takeRateTokens'] satisfies (keyof RateBucketStore)[],
  revocationFeed: ['listRevocations'] satisfies (keyof RevocationFeedStore)[],
  administration: [
    'listClients', 'deleteClient', 'createUser', 'listUsers', 'deleteUser', 'setUserPassword', 'listConsents', 'revokeConsents', 'rotateSigningKey',
  ] satisfies (keyof StoreAdministration)[],
  console: ['listClientsPage', 'listUsersPage', 'setUserAdmin', 'endUserSessions'] satisfies (keyof StoreConsole)[],
  auditEvents: ['recordAuditEvents', 'listAuditEvents'] satisfies (keyof AuditEventStore)[],
};

/** What was found of each store, asked about on hot paths (every token request): a store's methods do not change. */
const known = new WeakMap<Store, Partial<Record<StoreCapability, boolean>>>();

function has(store: Store, capability: StoreCapability): boolean {
  let found = known.get(store);
  if (found === undefined) known.set(store, (found = {}));
  return (found[capability] ??= inspect(store, capability));
}

function inspect(store: Store, capability: StoreCapability): boolean {
  const methods = CAPABILITY_METHODS[capability];
  const present = methods.filter((method) => typeof (store as unknown as Record<string, unknown>)[method] === 'function');
  if (present.length === 0) return false;
  if (present.length === methods.length) return true;
  const missing = methods.filter((method) => !present.includes(method));
  throw new TypeError(`the store has ${present.join(', ')} but not ${missing.join(', ')}: its ${capability} capability needs every one of them, or none`);
}

export const hasUpkeep = (store: Store): store is Store & StoreUpkeep => has(store, 'upkeep');
export const hasRateBuckets = (store: Store): store is Store & RateBucketStore => has(store, 'rateBuckets');
export const hasRevocationFeed = (store: Store): store is Store & RevocationFeedStore => has(store, 'revocationFeed');
export const hasAdministration = (store: Store): store is Store & StoreAdministration => has(store, 'administration');
export const hasConsole = (store: Store): store is Store & StoreConsole => has(store, 'console');
export const hasAuditEvents = (store: Store): store is Store & AuditEventStore => has(store, 'auditEvents');

/** The capabilities the store has. */
export function capabilitiesOf(store: Store): StoreCapability[] {
  return (Object.keys(CAPABILITY_METHODS) as StoreCapability[]).filter((capability) => has(store, capability));
}

export const isFullStore = (store: Store): store is FullStore => capabilitiesOf(store).length === Object.keys(CAPABILITY_METHODS).length;
