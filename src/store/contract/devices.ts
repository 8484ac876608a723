import type { AuthorizationCodeRecord, GrantRecord } from './grants.js';

/**
 * A device authorization request (RFC 8628), found by the hash of its device code (what the
 * device polls with) or of its user code (what the person enters). Approving it creates its
 * grant and an authorization code whose hash is the device code's, which the token endpoint
 * then redeems as it redeems codes: once.
 */
export interface DeviceAuthorizationRecord {
  deviceCodeHash: string;
  userCodeHash: string;
  clientId: string;
  scope: string[];
  resource: string;
  /** Seconds the device must wait between polls; 5 more after each poll that came too soon (RFC 8628 §3.5). */
  interval: number;
  lastPolledAt: number | null;
  status: 'pending' | 'approved' | 'denied';
  createdAt: number;
  expiresAt: number;
}

/**
 * What a poll found: the authorization as it stands after the poll was recorded. `slow_down`: it
 * is pending and the poll came sooner than the interval allows (which has grown by 5 s);
 * `foreign`: another client's, left as it was.
 */
export type DevicePollResult =
  { status: 'pending' | 'slow_down' | 'approved' | 'denied' | 'expired' | 'foreign'; record: DeviceAuthorizationRecord } | { status: 'missing' };

/**
 * Device authorizations (RFC 8628, capability `deviceAuthorization`): without it the server has no
 * device grant, no /device_authorization and no /device page, and its metadata names neither.
 */
export interface DeviceAuthorizationStore {
  /** Throws a conflict StoreError when the device code hash or the user code hash is taken. */
  createDeviceAuthorization(record: DeviceAuthorizationRecord): Promise<void>;
  /** The authorization whose user code this is, while it is pending and unexpired at `now`. */
  findPendingDeviceAuthorization(userCodeHash: string, now: number): Promise<DeviceAuthorizationRecord | undefined>;
  /**
   * In one transaction: marks the authorization approved if it is pending and unexpired, and
   * creates `grant` with its authorization code, whose hash is the device code's and which
   * expires with the authorization (the token endpoint redeems it with redeemAuthorizationCode).
   * False, writing nothing, otherwise: of two concurrent decisions only one is taken.
   */
  approveDeviceAuthorization(
    deviceCodeHash: string,
    now: number,
    grant: GrantRecord,
    code: Omit<AuthorizationCodeRecord, 'codeHash' | 'expiresAt'>,
  ): Promise<boolean>;
  /** Marks the authorization denied if it is pending and unexpired; false otherwise. */
  denyDeviceAuthorization(deviceCodeHash: string, now: number): Promise<boolean>;
  /**
   * A poll by the client, in one atomic step: records when it came and, for a pending
   * authorization polled sooner than its interval after the last poll, adds 5 s to the interval
   * (this and every later poll are held to it) and says `slow_down`. Another client's
   * authorization is neither changed nor shown (`foreign`); an expired one is `expired`.
   */
  pollDeviceAuthorization(deviceCodeHash: string, clientId: string, now: number): Promise<DevicePollResult>;
}
