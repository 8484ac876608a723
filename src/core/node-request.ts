/**
 * Whether `request` is the lazy Web Request @hono/node-server built from `incoming` (the Node
 * request it passes along as `c.env.incoming`). Only then do the Node request's bytes and framing
 * describe this Request's body: a Request a middleware put in its place (a decompressing one, say)
 * has a body of its own. The adapter keeps the Node request under a symbol it does not export;
 * found once by its description. Anything else (another adapter, a later version that drops the
 * symbol) answers false, and callers read the Web Request as before.
 */
let incomingKey: symbol | undefined;

export function builtFromNodeRequest(request: Request, incoming: unknown): boolean {
  if (typeof incoming !== 'object' || incoming === null) return false;
  const fields = request as unknown as Record<symbol, unknown>;
  if (incomingKey !== undefined && fields[incomingKey] === incoming) return true;
  const key = Object.getOwnPropertySymbols(request).find((symbol) => symbol.description === 'incomingKey');
  if (key === undefined || fields[key] !== incoming) return false;
  incomingKey = key;
  return true;
}

/**
 * One header from a Node request's raw headers (`name` in lower case), as
 * `request.headers.get(name)` answers it: repeats joined with ", ", surrounding HTTP whitespace
 * trimmed; null when absent. Under @hono/node-server, `request.headers` would build an undici
 * Headers object of every header, validated one by one, to read one of them.
 */
export function rawHeader(rawHeaders: readonly string[], name: string): string | null {
  let value: string | null = null;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const key = rawHeaders[i]!;
    if (key.length === name.length && key.toLowerCase() === name) {
      const found = trimHttpWhitespace(rawHeaders[i + 1]!);
      value = value === null ? found : `${value}, ${found}`;
    }
  }
  return value;
}

const isSpace = (code: number): boolean => code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;

/** Fetch's header value normalization: only tab, LF, CR and space, not String#trim's wider set. */
function trimHttpWhitespace(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && isSpace(value.charCodeAt(start))) start++;
  while (end > start && isSpace(value.charCodeAt(end - 1))) end--;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}
