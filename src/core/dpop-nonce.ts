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
  /** The nonces of the last few slots, by slot: a slot's nonce is made once, not for every request. */
  readonly #made = new Map<number, { text: string; bytes: Buffer }>();

  constructor(key: Buffer, options: { slotSeconds?: number } = {}) {
    if (key.length < 16) throw new Error('a DPoP nonce key needs at least 16 bytes');
    this.#key = key;
    this.#slotSeconds = options.slotSeconds ?? 120;
  }

  /** The nonce to give now (the same one for the whole slot). */
  issue(now: number): string {
    return this.#nonce(Math.floor(now / this.#slotSeconds)).text;
  }

  /** Whether `nonce` is one we gave in this slot or the one before. */
  check(nonce: string | undefined, now: number): boolean {
    if (nonce === undefined || nonce.length > 64) return false;
    const slot = Math.floor(now / this.#slotSeconds);
    const given = Buffer.from(nonce);
    return this.#matches(given, slot) || this.#matches(given, slot - 1);
  }

  #nonce(slot: number): { text: string; bytes: Buffer } {
    const made = this.#made.get(slot);
    if (made) return made;
    const counter = Buffer.alloc(6);
    counter.writeUIntBE(slot, 0, 6);
    const mac = createHmac('sha256', this.#key).update(counter).digest().subarray(0, 16);
    const text = Buffer.concat([counter, mac]).toString('base64url');
    if (this.#made.size >= 4) this.#made.delete(this.#made.keys().next().value!);
    const nonce = { text, bytes: Buffer.from(text) };
    this.#made.set(slot, nonce);
    return nonce;
  }

  #matches(given: Buffer, slot: number): boolean {
    const expected = this.#nonce(slot).bytes;
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
