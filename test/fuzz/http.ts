/**
 * HTTP/1.1 spoken by hand over `node:net`, so that what fetch refuses to send (bad methods,
 * control characters in headers, lying Content-Length, broken chunking, no Host) reaches the real
 * Node server, and a small reader for what comes back.
 */
import { connect } from 'node:net';

export interface FuzzRequest {
  /** What the generator meant, for the report: "token: mutated refresh_token request". */
  label: string;
  method: string;
  /** The request target as sent: a path and query, or anything else. */
  target: string;
  headers: [string, string][];
  body?: Buffer | undefined;
  /**
   * How the body is framed: `length` adds Content-Length (the default), `chunked` sends it in
   * random chunks with Transfer-Encoding, `raw` adds nothing (the headers say what they say).
   */
  framing?: 'length' | 'chunked' | 'raw';
  /** Leave out the Host header. */
  noHost?: boolean;
  /** The HTTP version on the request line. Default HTTP/1.1. */
  version?: string;
}

export interface FuzzResponse {
  status: number;
  headers: Map<string, string>;
  body: Buffer;
}

/** The request's bytes on the wire. Every request ends its connection, so each stands alone. */
export function encodeRequest(request: FuzzRequest, host: string, chunkSizes: () => number): Buffer {
  const lines = [`${request.method} ${request.target} ${request.version ?? 'HTTP/1.1'}`];
  if (!request.noHost) lines.push(`Host: ${host}`);
  for (const [name, value] of request.headers) lines.push(`${name}: ${value}`);
  lines.push('Connection: close');
  const framing = request.framing ?? 'length';
  const body = request.body ?? Buffer.alloc(0);
  if (framing === 'length' && (request.body !== undefined || request.method === 'POST')) lines.push(`Content-Length: ${body.length}`);
  if (framing === 'chunked') lines.push('Transfer-Encoding: chunked');
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  if (framing !== 'chunked') return Buffer.concat([head, body]);
  const parts: Buffer[] = [head];
  for (let at = 0; at < body.length;) {
    const size = Math.max(1, Math.min(body.length - at, chunkSizes()));
    parts.push(Buffer.from(`${size.toString(16)}\r\n`), body.subarray(at, at + size), Buffer.from('\r\n'));
    at += size;
  }
  parts.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(parts);
}

/** Sends the bytes and reads until the server closes; null when it closed without a word. */
export function exchange(port: number, bytes: Buffer, timeoutMs: number): Promise<{ response: FuzzResponse | null; raw: Buffer; timedOut: boolean }> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (timedOut: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const raw = Buffer.concat(chunks);
      resolve({ response: parseResponse(raw), raw, timedOut });
    };
    const timer = setTimeout(() => finish(true), timeoutMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => finish(false));
    socket.on('close', () => finish(false));
    // The server may answer and close before we finished writing (413, 400): a reset then is normal.
    socket.on('error', () => finish(false));
    socket.write(bytes);
  });
}

/** The first final response in `raw` (interim 1xx skipped), its body unchunked. */
export function parseResponse(raw: Buffer): FuzzResponse | null {
  let rest = raw;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const [statusLine, ...headerLines] = rest.subarray(0, end).toString('latin1').split('\r\n');
    const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '');
    if (!match) return null;
    const status = Number(match[1]);
    const headers = new Map<string, string>();
    for (const line of headerLines) {
      const colon = line.indexOf(':');
      if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    rest = rest.subarray(end + 4);
    if (status >= 100 && status < 200) continue;
    const body =
      headers.get('transfer-encoding')?.toLowerCase() === 'chunked' ? unchunk(rest) : rest.subarray(0, Number(headers.get('content-length') ?? rest.length));
    return { status, headers, body };
  }
}

function unchunk(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) break;
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/** A request as one readable block for the failure report (long bodies cut). */
export function describeRequest(request: FuzzRequest): string {
  const body = request.body ?? Buffer.alloc(0);
  const shown =
    body.length > 600 ? `${JSON.stringify(body.subarray(0, 600).toString('latin1'))}… (${body.length} bytes)` : JSON.stringify(body.toString('latin1'));
  const target = request.target.length > 600 ? `${request.target.slice(0, 600)}… (${request.target.length} chars)` : request.target;
  const headers = request.headers.map(([k, v]) => `  ${JSON.stringify(k)}: ${JSON.stringify(v.length > 300 ? `${v.slice(0, 300)}… (${v.length} chars)` : v)}`);
  return [
    `${request.label}`,
    `${JSON.stringify(request.method)} ${JSON.stringify(target)} ${request.version ?? 'HTTP/1.1'}${request.noHost ? ' (no Host)' : ''} framing=${request.framing ?? 'length'}`,
    ...headers,
    `  body: ${shown}`,
  ].join('\n');
}
