import { hkdfSync, randomInt } from 'node:crypto';
import { SecretBox, secretKeyId } from '../core/secret-box.js';
import { hashSecret, randomToken } from '../core/secrets.js';

/*
 * The two codes of a device authorization (RFC 8628): the device code the device polls with
 * (256 random bits) and the short user code a person types on the verification page. Both are
 * stored only as hashes, each hashed under its own label, so that a device code is never found
 * where an authorization code is looked up, nor the other way round.
 */

/** The verification page (RFC 8628 §3.3), under the issuer: for people, not programs. */
export const DEVICE_VERIFICATION_PATH = '/device';
/** Seconds a device authorization (and its codes) lasts. */
export const DEVICE_CODE_TTL = 600;
/** Seconds the device waits between polls until told to slow down (RFC 8628 §3.2). */
export const DEVICE_POLL_INTERVAL = 5;

/** RFC 8628 §6.1: consonants only, no vowels (no words) and no look-alikes (0/O, 1/I/L… none are here). */
const ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const USER_CODE_LENGTH = 8;

export function newDeviceCode(): string {
  return randomToken(32);
}

export function deviceCodeHash(deviceCode: string): string {
  return hashSecret(`device_code:${deviceCode}`);
}

/** A new user code, normalised (8 letters; format it with displayUserCode). 20^8 ≈ 2^34.6 codes. */
export function newUserCode(): string {
  let code = '';
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += ALPHABET[randomInt(ALPHABET.length)];
  return code;
}

/**
 * What a person typed, as the code it names: any case, with or without the dash or spaces.
 * Undefined when it cannot be a user code at all (wrong length, a letter never used).
 */
export function normalizeUserCode(typed: string): string | undefined {
  const code = typed.toUpperCase().replace(/[\s-]+/g, '');
  if (code.length !== USER_CODE_LENGTH) return undefined;
  for (const c of code) if (!ALPHABET.includes(c)) return undefined;
  return code;
}

/** The code as the device shows it: two groups of four letters joined by a dash (BCDF-GHJK). */
export function displayUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

export function userCodeHash(code: string): string {
  return hashSecret(`user_code:${code}`);
}

/**
 * The user code is shown again on the consent page for the person to compare with the device's,
 * but never stored readable: it is sealed with a key derived from this browser's binding cookie
 * (which the store knows only as a hash), bound to the interaction.
 */
function browserBox(bindingCookie: string): SecretBox {
  const key = Buffer.from(hkdfSync('sha256', bindingCookie, '', 'context-auth device user code', 32));
  return new SecretBox([{ id: secretKeyId(key), key }]);
}

export function sealUserCode(code: string, bindingCookie: string, interactionId: string): string {
  return browserBox(bindingCookie).seal(code, interactionId);
}

/** The sealed user code, or undefined when this browser's cookie does not open it. */
export function openUserCode(sealed: string, bindingCookie: string, interactionId: string): string | undefined {
  const opened = browserBox(bindingCookie).open(sealed, interactionId);
  return opened.ok ? opened.value : undefined;
}
