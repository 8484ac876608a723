/**
 * A request sent on to an HTTP upstream over node:http, on the keep-alive connections of its
 * agent, and the answer handed back as suits it: a small one of known length whole, anything else
 * (an event stream above all) as a stream that reaches the client as the upstream writes it.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { Readable, pipeline } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { gatewayFailure } from './gateway-errors.js';
import type { GatewayRequest } from './gateway-request.js';
import { clientResponseHeaders, upstreamRequestHeaders } from './upstream-headers.js';

export interface ForwardOptions {
  /** How long the upstream may take to answer with its status and headers; past it, 504. */
  timeoutMs: number;
  /** The Authorization header the upstream gets (a token of ours for it), or none. */
  authorization?: string | undefined;
}

/** What the upstream answered, for the caller's bookkeeping (sessions, metrics). */
export interface Forwarded {
  response: Response;
  /** The upstream's status, or the gateway's own failure. */
  outcome: { kind: 'answered'; status: number; sessionId: string | null } | { kind: 'failed'; failure: 'unreachable' | 'timeout' | 'refused' | 'cancelled' };
}

/** An upstream's address, and the agent that keeps its connections. */
export interface UpstreamTarget {
  url: URL;
  agent: HttpAgent;
  /** What every request to it shares: scheme, host (an IPv6 literal without its brackets), port, agent. */
  base: { protocol: string; hostname: string; port: string; agent: HttpAgent };
  send: typeof httpRequest;
}

/** Idle connections kept open to one upstream. Those in use are bounded by the listener's connections: one request each at a time. */
const MAX_IDLE_CONNECTIONS = 64;

/** Largest answer of known length handed back whole, as a buffer, rather than as a stream. */
const WHOLE_MAX_BYTES = 64 * 1024;

// Statuses whose answer has no body (304 is refused as a 3xx): a Response built with one throws.
const NULL_BODY = new Set([204, 205]);

export function upstreamTarget(url: URL): UpstreamTarget {
  const https = url.protocol === 'https:';
  const options = { keepAlive: true, maxFreeSockets: MAX_IDLE_CONNECTIONS };
  const agent = https ? new HttpsAgent(options) : new HttpAgent(options);
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { url, agent, base: { protocol: url.protocol, hostname, port: url.port, agent }, send: https ? httpsRequest : httpRequest };
}

/**
 * Sends the request on to the target, its body (read and capped by the caller) with its length;
 * a query the client sent takes the place of the target's. The timeout covers the wait for the
 * answer's status and headers, not a stream that then stays open; the client going away ends the
 * upstream request, and with it the connection.
 */
export function forwardRequest(request: GatewayRequest, target: UpstreamTarget, options: ForwardOptions): Promise<Forwarded> {
  const { url } = target;
  return new Promise((resolve) => {
    let failure: 'timeout' | 'cancelled' | undefined;
    let settled = false;
    const upstream = target.send({
      ...target.base,
      path: `${url.pathname}${searchOf(request.url) || url.search}`,
      method: request.method,
      headers: upstreamRequestHeaders(request.headers, options.authorization, request.body?.byteLength),
    });
    const timer = setTimeout(() => {
      failure = 'timeout';
      upstream.destroy();
    }, options.timeoutMs);
    const stopWatching = request.whenGone(() => {
      failure ??= 'cancelled';
      upstream.destroy();
    });
    const settle = (forwarded: Forwarded): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      stopWatching();
      resolve(forwarded);
    };
    const noAnswer = (): void => {
      if (!settled) settle(failed(failure ?? 'unreachable'));
    };
    // Before the answer: no answer at all ('close' too: a request ended before it had a
    // connection closes without an error). After it, the answer's own events tell.
    let answered = false;
    upstream.on('error', noAnswer);
    upstream.on('close', () => {
      if (!answered) noAnswer();
    });
    upstream.on('response', (answer: IncomingMessage) => {
      answered = true;
      clearTimeout(timer);
      const status = answer.statusCode ?? 0;
      // A 401 from the upstream is about our credentials for it, not the person's: passed on, it
      // would send the client to authorize again, here, for nothing. A redirect is not followed.
      if (status === 401 || status === 407 || (status >= 300 && status < 400)) {
        answer.destroy();
        return settle(failed('refused'));
      }
      // Not an answer a Response can carry (a status past 599).
      if (status < 200 || status > 599) {
        answer.destroy();
        return settle(failed('unreachable'));
      }
      const headers = clientResponseHeaders(answer.headers);
      const sessionId = answer.headers['mcp-session-id'];
      const outcome = { kind: 'answered', status, sessionId: typeof sessionId === 'string' ? sessionId : null } as const;
      if (NULL_BODY.has(status) || request.method === 'HEAD') {
        answer.resume();
        return settle({ response: new Response(null, { status, headers }), outcome });
      }
      const length = Number(answer.headers['content-length']);
      const plain = !answer.headers['content-encoding'] || answer.headers['content-encoding'] === 'identity';
      if (plain && length <= WHOLE_MAX_BYTES && !isEventStream(headers['content-type'])) {
        // Whole: the answer is written to the client with its length, in one piece.
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          // Read from a socket: never in shared memory.
          const body = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)) as Uint8Array<ArrayBuffer>;
          settle({ response: new Response(body, { status, headers }), outcome });
        });
        // Cut off before its end: by the upstream, or by the client going away.
        answer.on('error', noAnswer);
        answer.on('close', noAnswer);
        return;
      }
      // A stream: cancelled by the client, it destroys the answer, and so the upstream connection.
      settle({ response: new Response(Readable.toWeb(decoded(answer)) as ReadableStream<Uint8Array>, { status, headers }), outcome });
    });
    upstream.end(request.body);
  });
}

/** The query of a URL as Request.url gives it (no fragment), '' when there is none. */
function searchOf(url: string): string {
  const question = url.indexOf('?');
  return question < 0 || question === url.length - 1 ? '' : url.slice(question);
}

function isEventStream(contentType: string | undefined): boolean {
  return contentType !== undefined && contentType.toLowerCase().startsWith('text/event-stream');
}

/**
 * The answer's body decoded, as the client expects it: the upstream was asked for none, but may
 * compress anyway. A coding this does not know is passed on as it came.
 */
function decoded(answer: IncomingMessage): Readable {
  const coding = (answer.headers['content-encoding'] ?? '').trim().toLowerCase();
  const decoder =
    coding === 'gzip' || coding === 'x-gzip' ? createGunzip() : coding === 'deflate' ? createInflate() : coding === 'br' ? createBrotliDecompress() : undefined;
  // pipeline: an error or a destroy on either side ends both.
  return decoder ? pipeline(answer, decoder, () => {}) : answer;
}

const FAILURES = {
  unreachable: ['bad_gateway', 'the upstream context server could not be reached'],
  timeout: ['gateway_timeout', 'the upstream context server did not answer in time'],
  refused: ['bad_gateway', 'the upstream context server refused the gateway'],
  // The client went away first: nothing is said of the upstream, and nobody reads the answer.
  cancelled: ['bad_gateway', 'the request was cancelled'],
} as const;

function failed(failure: keyof typeof FAILURES): Forwarded {
  const [error, description] = FAILURES[failure];
  return { response: gatewayFailure(error, description), outcome: { kind: 'failed', failure } };
}
