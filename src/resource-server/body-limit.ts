/**
 * Request bodies capped before they are read: a token holder may still send a huge body, and a
 * context server must not hold all of it in memory to find out. A declared Content-Length over
 * the cap is refused at once; a body without one is counted as it streams and cut off at the cap.
 */
import { readNodeBytes } from '../node/body.js';
import { framedWithin, untouchedNodeRequestOf } from '../node/request.js';

/** The default cap for bodies sent to a protected route: 1 MiB (JSON-RPC messages are small). */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

export class BodyTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`the request body is larger than ${maxBytes} bytes`);
    this.name = 'BodyTooLargeError';
  }
}

/** 413, in the OAuth-style JSON the guard answers with. */
export function bodyTooLargeResponse(maxBytes: number): Response {
  return Response.json(
    { error: 'invalid_request', error_description: `the request body is larger than ${maxBytes} bytes` },
    { status: 413, headers: { Connection: 'close' } },
  );
}

/** True when the request declares a body longer than the cap. */
export function declaresTooMuch(contentLength: string | null | undefined, maxBytes: number): boolean {
  const declared = Number(contentLength);
  return Number.isFinite(declared) && declared > maxBytes;
}

/**
 * The same request, its body stream cut off with BodyTooLargeError past `maxBytes`; null when
 * it declares more than that (answer bodyTooLargeResponse). Not a Response in that case: servers
 * that replace the global Response (the Node adapter of Hono) make `instanceof` unreliable.
 * Given the Node request behind it (`c.env.incoming` on @hono/node-server, while the Web Request is
 * still the adapter's untouched one: node/request.ts), a request whose length Node's parser
 * enforces is returned as it is: wrapping it would only cost time.
 */
export function limitRequestBody(request: Request, maxBytes: number, incoming?: unknown): Request | null {
  // First: request.headers would build a Headers object of the lazy Web Request's every header.
  if (incoming !== undefined) {
    const node = untouchedNodeRequestOf(request, incoming);
    if (node && framedWithin(node, maxBytes)) return request;
  }
  if (declaresTooMuch(request.headers.get('content-length'), maxBytes)) return null;
  if (!request.body) return request;
  let seen = 0;
  const counted = request.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > maxBytes) controller.error(new BodyTooLargeError(maxBytes));
        else controller.enqueue(chunk);
      },
    }),
  );
  return new Request(request, { body: counted, duplex: 'half' } as RequestInit);
}

/**
 * Reads a body capped at `maxBytes`; throws BodyTooLargeError past it, and an Error when the body
 * cannot be had to its end (the client's connection broke mid-body). `incoming` as for
 * limitRequestBody: given the Node request behind the Web Request, the body is read from it,
 * without a web stream; the Web Request's own body is then spent.
 */
export async function readLimitedBody(request: Request, maxBytes: number, incoming?: unknown): Promise<Uint8Array> {
  const node = incoming === undefined ? undefined : untouchedNodeRequestOf(request, incoming);
  if (node) {
    const read = await readNodeBytes(node, maxBytes);
    if (read === 'too_large') throw new BodyTooLargeError(maxBytes);
    if (read === 'cut_off') throw new Error('the request body was cut off before its end');
    return read;
  }
  const limited = limitRequestBody(request, maxBytes);
  if (limited === null) throw new BodyTooLargeError(maxBytes);
  try {
    return new Uint8Array(await limited.arrayBuffer());
  } catch (error) {
    // fetch wraps a stream's error in a TypeError whose cause is ours.
    if (error instanceof BodyTooLargeError || (error as { cause?: unknown }).cause instanceof BodyTooLargeError) throw new BodyTooLargeError(maxBytes);
    throw error;
  }
}

const utf8 = new TextDecoder();

/** Reads a body capped at `maxBytes`, as text (UTF-8, as Request.text() decodes); as readLimitedBody otherwise. */
export async function readLimitedText(request: Request, maxBytes: number, incoming?: unknown): Promise<string> {
  return utf8.decode(await readLimitedBody(request, maxBytes, incoming));
}
