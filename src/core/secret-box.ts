/**
 * Encryption at rest for secrets we must be able to read back (upstream access and refresh
 * tokens): AES-256-GCM with a random 96-bit nonce per value. The value's owner (e.g. the grant id)
 * is bound in as associated data, so a sealed value copied onto another row does not open.
 *
 * Keys rotate: the first key seals, every key listed opens. A sealed value names its key by a
 * short id (a hash of the key, never the key), so an operator adds the new key in front, keeps the
 * old one until the values sealed with it have expired or been re-sealed, then drops it.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { fail, ok, type Defect, type Result } from './result.js';

const VERSION = 'v1';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
export const SECRET_KEY_BYTES = 32;

export interface SecretKey {
  id: string;
  key: Buffer;
}

/**
 * Why a sealed value does not open: it is not one (`malformed`), the key that sealed it is not
 * configured (`unknown_key`, dropped too soon?), or it was changed or sealed for another owner
 * (`altered`). Nothing it held can be trusted then.
 */
export type SealedValueDefect = Defect<'malformed' | 'unknown_key' | 'altered'>;

/** A key's public name: the first 8 bytes of its SHA-256, hex. */
export function secretKeyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

/**
 * Reads keys written as base64url (or standard base64) of 32 random bytes, several separated by
 * commas or whitespace, newest first: the form of `$CONTEXT_AUTH_SECRET_KEY` and of the key file.
 * Text that holds no such key is the operator's to fix: an Error that says what is wrong with it.
 */
export function parseSecretKeys(text: string, source: string): SecretKey[] {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  if (parts.length === 0) throw new Error(`${source} holds no key`);
  return parts.map((part, index) => {
    // Accept standard base64 (what `openssl rand -base64 32` prints) as well as base64url.
    const normal = part.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    const key = Buffer.from(normal, 'base64url');
    if (key.length !== SECRET_KEY_BYTES || key.toString('base64url') !== normal) {
      throw new Error(`${source}: key ${index + 1} is not 32 bytes in base64 (make one with: openssl rand -base64 32)`);
    }
    return { id: secretKeyId(key), key };
  });
}

/** A new random key in the form parseSecretKeys reads. */
export function generateSecretKey(): string {
  return randomBytes(SECRET_KEY_BYTES).toString('base64url');
}

export class SecretBox {
  private readonly sealing: SecretKey;
  private readonly byId: Map<string, Buffer>;

  constructor(keys: SecretKey[]) {
    if (keys.length === 0) throw new RangeError('at least one key is needed');
    for (const { key } of keys) if (key.length !== SECRET_KEY_BYTES) throw new RangeError('keys are 32 bytes');
    this.sealing = keys[0]!;
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  /** `v1.<key id>.<nonce>.<ciphertext and tag>`, base64url; `owner` must be given again to open it. */
  seal(plaintext: string, owner: string): string {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.sealing.key, nonce);
    cipher.setAAD(Buffer.from(owner));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return [VERSION, this.sealing.id, nonce.toString('base64url'), body.toString('base64url')].join('.');
  }

  /** What `seal` sealed for `owner`, or why it does not open. */
  open(sealed: string, owner: string): Result<string, SealedValueDefect> {
    const notSealed = fail<SealedValueDefect>({ code: 'malformed', description: 'not a sealed value' });
    const [version, keyId, nonceText, bodyText, extra] = sealed.split('.');
    if (version !== VERSION || !keyId || !nonceText || !bodyText || extra !== undefined) return notSealed;
    const key = this.byId.get(keyId);
    if (!key) return fail({ code: 'unknown_key', description: `sealed with key ${keyId}, which is not configured (was it dropped too soon?)` });
    const nonce = Buffer.from(nonceText, 'base64url');
    const body = Buffer.from(bodyText, 'base64url');
    if (nonce.length !== NONCE_BYTES || body.length < TAG_BYTES) return notSealed;
    const decipher = createDecipheriv('aes-256-gcm', key, nonce);
    decipher.setAAD(Buffer.from(owner));
    decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
    try {
      return ok(Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString('utf8'));
    } catch {
      return fail({ code: 'altered', description: 'the sealed value was altered, or belongs to another owner' });
    }
  }

  /** Whether the value was sealed with an older key (re-seal it when it is next written). */
  isStale(sealed: string): boolean {
    return sealed.split('.')[1] !== this.sealing.id;
  }
}
