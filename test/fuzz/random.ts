/**
 * A seeded source of random choices and nasty values for the fuzz run. mulberry32: a 32-bit
 * state, fast, and the same sequence for the same seed on every machine — which is all a replay
 * needs (no new dependency, and never crypto randomness, which could not be replayed).
 */

/** The generator of one step: seeded from the run's seed and the step's index, so step N is the same whatever ran before it. */
export function stepSeed(seed: number, step: number): number {
  let h = (seed ^ Math.imul(step + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

export class Random {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** A whole number in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  /** One of the entries, chosen in proportion to its weight. */
  weighted<T>(entries: readonly (readonly [number, T])[]): T {
    const total = entries.reduce((sum, [weight]) => sum + weight, 0);
    let roll = this.next() * total;
    for (const [weight, value] of entries) {
      roll -= weight;
      if (roll < 0) return value;
    }
    return entries[entries.length - 1]![1];
  }

  /** A length up to `max`, biased towards the small and the boundaries: most bugs are at 0, 1 and the limits. */
  length(max = 64): number {
    return this.weighted([
      [4, this.int(4)],
      [4, this.int(max)],
      [1, this.pick([max, ...[255, 256, 1024, 4096, 8192, 65_535, 65_536, 70_000].filter((n) => n <= max)])],
    ]);
  }

  bytes(n: number): Buffer {
    const out = Buffer.alloc(n);
    for (let i = 0; i < n; i++) out[i] = this.int(256);
    return out;
  }

  /** Characters from one of a few alphabets: printable, URL-ish, control, Unicode (lone surrogates too). */
  string(max = 64): string {
    const n = this.length(max);
    const alphabet = this.pick(ALPHABETS);
    let out = '';
    for (let i = 0; i < n; i++) out += alphabet(this);
    return out;
  }

  /** A value a programmer did not expect: from the list below, random text, or a mutation of `near`. */
  nasty(near?: string): string {
    return this.weighted<() => string>([
      [5, () => this.pick(NASTY_STRINGS)],
      [3, () => this.string()],
      [near === undefined ? 0 : 4, () => this.mutateString(near!)],
    ])();
  }

  /** A small change to a string: a character flipped, cut, doubled, inserted or encoded. */
  mutateString(value: string): string {
    if (value.length === 0) return this.pick(NASTY_STRINGS);
    const at = this.int(value.length);
    return this.weighted<() => string>([
      [3, () => value.slice(0, at) + String.fromCharCode(value.charCodeAt(at) ^ (1 << this.int(7))) + value.slice(at + 1)],
      [2, () => value.slice(0, at)],
      [1, () => value + value],
      [2, () => value.slice(0, at) + this.pick(NASTY_STRINGS) + value.slice(at)],
      [1, () => value.toUpperCase()],
      [1, () => encodeURIComponent(value.replace(/[\ud800-\udfff]/g, '?'))],
      [1, () => ` ${value} `],
      [1, () => value.replace(/[a-z]/g, (c) => (this.chance(0.1) ? '%' : c))],
    ])();
  }

  /** A random JSON value: every type, deep or wide now and then. */
  json(depth = 0): unknown {
    const scalar = (): unknown =>
      this.pick<() => unknown>([
        () => null,
        () => this.chance(0.5),
        () => this.pick([0, -1, 1, 1.5, 2 ** 53, -(2 ** 63), 1e308, Number.MIN_VALUE]),
        () => this.nasty(),
        () => this.string(),
      ])();
    if (depth > 4 || this.chance(0.5)) return scalar();
    // Wide arrays hold scalars only, so that a value stays small enough to send.
    if (this.chance(0.1)) return Array.from({ length: this.pick([100, 1000]) }, scalar);
    if (this.chance(0.5)) return Array.from({ length: this.int(5) }, () => this.json(depth + 1));
    const object: Record<string, unknown> = {};
    for (let i = this.int(5); i > 0; i--) object[this.chance(0.2) ? this.pick(NASTY_KEYS) : this.string(12)] = this.json(depth + 1);
    return object;
  }
}

const range = (from: number, to: number) => (r: Random) => String.fromCharCode(from + r.int(to - from));
const ALPHABETS: readonly ((r: Random) => string)[] = [
  range(0x20, 0x7f),
  (r) => r.pick([..."abcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%"]),
  range(0x00, 0x20),
  range(0x80, 0x800),
  (r) => r.pick(['\u0000', '\ud800', '\udfff', '\u202e', '\ufeff', '\u2028', '🙂', '\u00e9', 'e\u0301', '\uffff', 'ｆ']),
];

/** Keys that reach prototypes or built-ins when a program copies objects naively. */
export const NASTY_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty', '', ' ', '\u0000', 'then'];

/** Values that broke parsers before: encodings, separators, number edge cases, URLs of every shape. */
export const NASTY_STRINGS: readonly string[] = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '%00',
  '%',
  '%%',
  '%ZZ',
  '%E0%A4%A',
  '%C0%AF',
  '%FF',
  '\ud800',
  '\udfff\ud800',
  '🙂',
  '\r\n',
  '\n',
  '\t',
  '+',
  '=',
  '&',
  '&&==',
  ';',
  ',',
  ':',
  '::',
  '"',
  "'",
  '\\',
  '\\u0000',
  '<',
  '>',
  '<script>alert(1)</script>',
  '{{7*7}}',
  '${7*7}',
  '[]',
  '{}',
  'null',
  'undefined',
  'true',
  'false',
  'NaN',
  'Infinity',
  '-0',
  '0',
  '-1',
  '1e309',
  '0x7fffffff',
  '9007199254740993',
  '99999999999999999999999',
  '1.0',
  '__proto__',
  'constructor',
  'toString',
  'a'.repeat(300),
  'a'.repeat(5000),
  '\u00e9'.repeat(2000),
  '🙂'.repeat(1000),
  'http://',
  'https://',
  'https:///cb',
  'https:evil.example/cb',
  'https:////evil.example/cb',
  'https:\\\\evil.example\\cb',
  'http://127.0.0.1:1/',
  'http://[::1]/cb',
  'http://[::ffff:127.0.0.1]/',
  'http://0x7f.1/',
  'http://user:pass@127.0.0.1/',
  'http://127.0.0.1:33333/callback#frag',
  'http://127.0.0.1:33333/callback?x=1&x=2',
  'http://localhost:99999/',
  'https://example.com:0/',
  'javascript:alert(1)',
  'data:text/html,<b>x</b>',
  'file:///etc/passwd',
  'urn:ietf:params:oauth:grant-type:jwt-bearer',
  'mailto:a@b',
  '//evil.example/cb',
  '/relative',
  '../../..',
  '..%2f..%2f',
  '*',
  '?',
  '#',
  'https://xn--80ak6aa92e.com/',
  'https://\u0430pple.com/',
  'http://127.0.0.1:33333/callback\u0000',
  'http://127.0.0.1:33333/%2e%2e/callback',
  'S256',
  's256',
  'plain',
  'none',
  'code',
  'token',
  'code id_token',
  'openid',
  'mcp:tools',
  'mcp:tools mcp:admin',
  'mcp:tools  mcp:admin',
  'authorization_code',
  'refresh_token',
  'client_credentials',
  'password',
  'implicit',
  'eyJhbGciOiJub25lIn0.e30.',
  'a.b.c',
  '...',
  'Bearer',
  'Basic',
  'Basic Og==',
  'DPoP x',
];
