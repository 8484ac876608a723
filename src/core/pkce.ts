import { createHash } from 'node:crypto';
import { OAuthError } from './errors.js';
import { safeEqual } from './secrets.js';

/** RFC 7636 section 4.1: 43 to 128 characters of the unreserved set. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
/** An S256 challenge is the base64url form of a SHA-256 digest: exactly 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9\-_]{43}$/;

export function s256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/** Checks the authorization request's PKCE parameters; only S256 is accepted (OAuth 2.1 §4.1.1). */
export function checkCodeChallenge(challenge: string | undefined, method: string | undefined): string {
  if (!challenge) throw new OAuthError('invalid_request', 'code_challenge is required (PKCE)');
  if (method === undefined) {
    throw new OAuthError('invalid_request', 'code_challenge_method is required; use S256');
  }
  if (method !== 'S256') throw new OAuthError('invalid_request', 'code_challenge_method must be S256');
  if (!S256_CHALLENGE.test(challenge)) {
    throw new OAuthError('invalid_request', 'code_challenge must be 43 base64url characters');
  }
  return challenge;
}

/** True when the verifier is well formed and hashes to the challenge (compared in constant time). */
export function verifyCodeVerifier(verifier: string | undefined, challenge: string): boolean {
  if (!verifier || !VERIFIER.test(verifier)) return false;
  return safeEqual(s256(verifier), challenge);
}
