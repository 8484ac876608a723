import { hasDeviceAuthorization } from '../store/capabilities.js';
import type { DeviceAuthorizationStore, Store } from '../store/store.js';

/**
 * The store's device authorizations. The device grant, /device_authorization and /device are
 * served only where the store keeps them (config.deviceGrant), so the flow never reaches here
 * on a store without them.
 */
export function deviceAuthorizations(store: Store): DeviceAuthorizationStore {
  if (!hasDeviceAuthorization(store)) throw new Error('the device grant needs a store with the deviceAuthorization capability');
  return store;
}
