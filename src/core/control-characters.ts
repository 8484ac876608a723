/**
 * Text from elsewhere (an upstream provider's names and emails, a client's name) on its way to an
 * operator's terminal. Control characters in it can move the cursor, clear the screen or rewrite
 * what was printed (escape sequences, C0 and C1 controls), and bidi overrides can show it in
 * another order than it is. The marks that only steer right-to-left text (LRM, RLM, ALM) stay.
 */
// eslint-disable-next-line no-control-regex -- control characters are the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const WHITE_CONTROL = /[\t\n\v\f\r\u0085\u2028\u2029]+/g;
/** What JSON.stringify leaves unescaped in strings (C0 it escapes; a C0 character outside strings is JSON's own white space). */
const JSON_UNESCAPED = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * For keeping: the text with line breaks and tabs as one space, other control characters and
 * bidi overrides removed, and an unpaired surrogate (which UTF-8 cannot hold) replaced.
 */
export function withoutControlCharacters(text: string): string {
  return text.replace(LONE_SURROGATE, '\ufffd').replace(WHITE_CONTROL, ' ').replace(CONTROL, '').trim();
}

/** For printing what may already be kept: each such character shown as an escape (`\x1b`, `\u202e`). */
export function printable(text: string): string {
  return text.replace(CONTROL, escape);
}

/** JSON text whose strings show such characters as `\u` escapes (`\u001b`): the same JSON value, safe on a terminal. */
export function printableJson(value: unknown, space?: number): string {
  return JSON.stringify(value, null, space).replace(JSON_UNESCAPED, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function escape(c: string): string {
  const code = c.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}
