/**
 * A request body read straight from Node's IncomingMessage, at most `maxBytes` of it: no Web
 * Request or web stream is built. What the authorization server's edge and the resource server's
 * capped reads share.
 */
import type { NodeRequest } from './request.js';

/** What a capped read gives: the bytes, or why there are none: past the cap, or cut off (the client's connection broke mid-body, or its framing did). */
export type NodeBody = Uint8Array | 'too_large' | 'cut_off';

const EMPTY = new Uint8Array(0);

/** The body, synchronously when it is all there already; a declared length past the cap is refused before anything is read. */
export function readNodeBytes(incoming: NodeRequest, maxBytes: number): NodeBody | Promise<NodeBody> {
  if (Number(incoming.headers['content-length'] ?? '0') > maxBytes) return 'too_large';
  // Usually the body came with the headers: Node's parser has the whole message buffered by the
  // time the handler reads it, taken in one synchronous read instead of listeners and a stream tick.
  if (incoming.readableFlowing === null && !incoming.readableEnded && incoming.complete === true) {
    if (incoming.readableLength > maxBytes) return 'too_large';
    return (incoming.read() as Buffer | null) ?? EMPTY;
  }
  return streamed(incoming, maxBytes);
}

/** The body as it streams in, counted: 'too_large' as soon as the count passes the cap (the rest is never read), 'cut_off' when the client went away mid-body. */
function streamed(incoming: NodeRequest, maxBytes: number): Promise<NodeBody> {
  if (incoming.readableEnded) return Promise.resolve(EMPTY);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onBroken);
      incoming.off('close', onBroken);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.byteLength;
      if (size > maxBytes) {
        // Stop reading here; once the 413 is sent the adapter drains or closes the connection.
        done();
        incoming.pause();
        resolve('too_large');
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      done();
      resolve(chunks.length === 0 ? EMPTY : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    // An error, or a close before the end: the client's connection broke mid-body, or its framing did.
    const onBroken = (): void => {
      done();
      resolve('cut_off');
    };
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onBroken);
    incoming.on('close', onBroken);
  });
}
