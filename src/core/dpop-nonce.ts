import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * DPoP nonces (RFC 9449 §8, §9) that need no record: a nonce names a time slot and carries a MAC
 * of it under the server's key, so any process holding the key (every replica) takes the nonces
 * any other gave. A nonce is taken during its own slot and the next, then the server answers
 * `use_dpop_nonce` with a fresh one: a proof made more than two slots ago cannot be replayed.
 */
export class DpopNonces {
  readonly #key: Buffer;
  readonly #slotSeconds: number;

  constructor(key: Buffer, options: { slotSeconds?: number } = {}) {
    if (key.length < 16) throw new Error('a DPoP nonce key needs at least 16 bytes');
    this.#key = key;
    this.#slotSeconds = options.slotSeconds ?? 120;
  }

  /** The nonce to give now (the same one for the whole slot). */
  issue(now: number): string {
    return this.#nonce(Math.floor(now / this.#slotSeconds));
  }

  /** Whether `nonce` is one we gave in this slot or the one before. */
  check(nonce: string | undefined, now: number): boolean {
    if (nonce === undefined || nonce.length > 64) return false;
    const slot = Math.floor(now / this.#slotSeconds);
    return this.#matches(nonce, slot) || this.#matches(nonce, slot - 1);
  }

  #nonce(slot: number): string {
    const counter = Buffer.alloc(6);
    counter.writeUIntBE(slot, 0, 6);
    const mac = createHmac('sha256', this.#key).update(counter).digest().subarray(0, 16);
    return Buffer.concat([counter, mac]).toString('base64url');
  }

  #matches(nonce: string, slot: number): boolean {
    const expected = Buffer.from(this.#nonce(slot));
    const given = Buffer.from(nonce);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
