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
