/**
 * A store with only the core contract (or without some capabilities): what a store written for
 * another database may be. Made from one of ours by leaving the capabilities' methods out.
 */
import { CAPABILITY_METHODS, type StoreCapability } from '../../src/store/capabilities.js';
import type { Store } from '../../src/store/store.js';

export function withoutCapabilities(store: Store, capabilities: readonly StoreCapability[] = Object.keys(CAPABILITY_METHODS) as StoreCapability[]): Store {
  const left = new Set<string>(capabilities.flatMap((capability) => CAPABILITY_METHODS[capability]));
  if (capabilities.includes('revocationFeed')) left.add('watchRevocations');
  return Object.fromEntries(Object.entries(store).filter(([name]) => !left.has(name))) as unknown as Store;
}
