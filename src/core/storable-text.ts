/**
 * Text a store can keep as it was given: no NUL character (PostgreSQL refuses it in text, and
 * `\u0000` in jsonb) and no unpaired surrogate (PostgreSQL refuses its escape in jsonb, and UTF-8
 * cannot encode it). No protocol value holds either, so requests holding them are refused where
 * they come in, the same on every store, instead of failing deep inside one store as a 500.
 */
// eslint-disable-next-line no-control-regex -- NUL is the point
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function isStorableText(value: string): boolean {
  return !UNSTORABLE.test(value);
}

/** Whether every string in a JSON value, keys included, is storable text. Walked without recursion: JSON may nest deeper than the stack. */
export function isStorableJson(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === 'string') {
      if (!isStorableText(item)) return false;
    } else if (Array.isArray(item)) {
      for (const inner of item) pending.push(inner);
    } else if (typeof item === 'object' && item !== null) {
      for (const [key, inner] of Object.entries(item)) {
        if (!isStorableText(key)) return false;
        pending.push(inner);
      }
    }
  }
  return true;
}
