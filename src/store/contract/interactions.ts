import type { AuthorizationRequest } from '../../core/protocol.js';

/** The upstream provider an interaction's person chose, and what its callback is checked against (sealed). */
export interface InteractionUpstream {
  provider: string;
  /** Sealed state, nonce and PKCE verifier that belong to the interaction; null until the person is sent upstream. */
  sealedPending: string | null;
}

/**
 * What an interaction started at the device verification page (RFC 8628) adds: the device
 * authorization its consent approves or denies, and the user code the person entered, sealed
 * with a key only this browser's binding cookie gives (never stored readable), shown on the
 * consent page for the person to compare with the device's.
 */
export interface DeviceInteraction {
  deviceCodeHash: string;
  sealedUserCode: string;
}

/** An authorization request waiting for the user to log in and consent. */
export interface InteractionRecord {
  id: string;
  clientId: string;
  /** The validated authorization request (see authorization-server/checks/authorization-request.ts). */
  request: AuthorizationRequest;
  /** SHA-256 of the cookie value that binds this interaction to the browser that started it. */
  browserBindingHash: string;
  /** The anti-CSRF token echoed by the pages' forms. */
  csrfToken: string;
  userId: string | null;
  createdAt: number;
  expiresAt: number;
  /** Set once the person chooses an upstream provider. */
  upstream: InteractionUpstream | null;
  /** Set for a device's authorization (the verification page); absent or null otherwise. */
  device?: DeviceInteraction | null;
}

/** What an interaction learns as the person goes on: who signed in, or the upstream provider they chose. */
export type InteractionChange = { userId: string } | { upstream: InteractionUpstream };

/** Interactions: authorization requests waiting for a person to sign in and decide. */
export interface InteractionStore {
  createInteraction(interaction: InteractionRecord): Promise<void>;
  /** Returns the interaction unless it is missing or expired at `now`. */
  getInteraction(id: string, now: number): Promise<InteractionRecord | undefined>;
  /** Records who signed in (a user that must exist), or the upstream provider chosen; nothing when the interaction is gone. */
  updateInteraction(id: string, change: InteractionChange): Promise<void>;
  /** Atomically removes and returns the interaction, so one consent yields one code. */
  consumeInteraction(id: string, now: number): Promise<InteractionRecord | undefined>;
}
