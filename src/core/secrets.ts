import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** 256 bits of randomness, base64url: codes, refresh tokens, client secrets, session ids. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** What the store keeps of a secret: its SHA-256, never the secret itself. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('base64url');
}

/** Constant-time comparison of two strings; hashes first so lengths leak nothing either. */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a, 'utf8').digest();
  const hb = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}
