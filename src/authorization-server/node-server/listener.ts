/**
 * The Node HTTP(S) server a running authorization server listens on: timeouts that keep idle and
 * slow sockets from accumulating, the connection limits, the socket's peer address of each
 * request, and a stop that lets the requests in flight finish.
 */
import type { Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer, type Http2Bindings, type HttpBindings } from '@hono/node-server';
import { noteBuiltFrom, notedNodeRequest } from '../../node/request.js';
import { defaultPerAddress, limitConnections } from './connection-limits.js';

/** Where and how the server listens; the defaults are `serve`'s. */
export interface ListenOptions {
  /** Default '127.0.0.1'. */
  host?: string;
  /** Default 8080; 0 picks a free port (`url` names it). */
  port?: number;
  /** Serve https: a PEM certificate (chain) and its unencrypted private key. Default: plain http. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** A connection whose request head (or TLS handshake) takes longer is closed. Default 10 000 ms. */
  headerTimeoutMs?: number;
  /** Connections open at once; at the cap a new one takes the place of the oldest without a request in progress. Default 1000. */
  maxConnections?: number;
  /** Connections one client address (IPv6: its /64) may hold; a `trustProxy` peer is not limited. 0: no limit. Default: a tenth of `maxConnections`. */
  maxConnectionsPerAddress?: number;
  /** How long a stop lets the requests in flight finish before it cuts them off. Default 10 000 ms. */
  drainMs?: number;
}

/** What the listener serves: a Hono app, or anything with its `fetch` (given the Node request and response as Hono's `c.env`). */
export interface FetchApp {
  fetch(request: Request, env: HttpBindings): Response | Promise<Response>;
}

export const LISTEN_DEFAULTS = { host: '127.0.0.1', port: 8080, headerTimeoutMs: 10_000, maxConnections: 1000, drainMs: 10_000 } as const;

/** While stopping, how often the connections that have gone idle are closed. */
const DRAIN_POLL_MS = 50;

export interface Listener {
  server: Server;
  /** Set once listening: `http(s)://host:port`, the port as picked. */
  url: string;
  /** The socket's peer address of a Web Request this listener received (for one a middleware made in its place: none). */
  clientAddress(request: Request): string | undefined;
  /** Serves `app` from now on; until then every request is answered 503. */
  serve(app: FetchApp): void;
  listen(): Promise<void>;
  /**
   * No new connections; idle ones closed as they go idle (a request on one was never begun, and
   * its client can retry); busy ones left to finish, each answer ending its connection, for up to
   * `drainMs`, then cut off. Resolves once every connection has closed.
   */
  drain(): Promise<void>;
}

/** `host:port`, an IPv6 host in brackets. */
export function listenAddress(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

export function createListener(options: ListenOptions, trustProxy: readonly string[]): Listener {
  const host = options.host ?? LISTEN_DEFAULTS.host;
  const port = options.port ?? LISTEN_DEFAULTS.port;
  const headerTimeoutMs = options.headerTimeoutMs ?? LISTEN_DEFAULTS.headerTimeoutMs;
  const maxConnections = options.maxConnections ?? LISTEN_DEFAULTS.maxConnections;
  const drainMs = options.drainMs ?? LISTEN_DEFAULTS.drainMs;
  const tls = options.tls;
  // Idle or slow sockets must not accumulate: headers (and whole requests) that take too long are
  // cut off, well before Node's 60 s default, checked every second rather than every 30; a TLS
  // handshake gets the same time as the headers, not Node's 120 s.
  const timeouts = {
    headersTimeout: headerTimeoutMs,
    requestTimeout: Math.max(headerTimeoutMs, 30_000),
    keepAliveTimeout: Math.min(5_000, headerTimeoutMs),
    connectionsCheckingInterval: Math.min(1_000, headerTimeoutMs),
    ...(tls ? { handshakeTimeout: headerTimeoutMs } : {}),
  };
  let app: FetchApp = { fetch: () => new Response('starting', { status: 503 }) };
  let stopping = false;
  const server = createAdaptorServer({
    fetch: async (request: Request, bindings: HttpBindings | Http2Bindings) => {
      // HTTP/1 (http or https) only: Node's IncomingMessage and ServerResponse.
      const env = bindings as HttpBindings;
      // The adapter built `request` from env.incoming, which goes along as c.env.incoming: noted,
      // so that the routes read that request's head and body straight from the Node request
      // while `request` is still the one they are handed (http/routes.ts).
      noteBuiltFrom(request, env.incoming);
      const response = await app.fetch(request, env);
      // While stopping, each answer ends its connection, so the client's next request goes elsewhere.
      if (stopping) env.outgoing.setHeader('connection', 'close');
      return response;
    },
    serverOptions: { ...timeouts, ...(tls ?? {}) },
    ...(tls ? { createServer: createHttpsServer } : {}),
  }) as Server;
  limitConnections(server, { maxConnections, perAddress: options.maxConnectionsPerAddress ?? defaultPerAddress(maxConnections), trustProxy });

  const listener: Listener = {
    server,
    url: '',
    clientAddress: (request) => notedNodeRequest(request)?.socket.remoteAddress,
    serve: (next) => {
      app = next;
    },
    listen: () =>
      new Promise<void>((resolve, reject) => {
        const failed = (error: Error) => reject(error);
        server.once('error', failed);
        server.listen(port, host, () => {
          server.off('error', failed);
          listener.url = `${tls ? 'https' : 'http'}://${listenAddress(host, (server.address() as AddressInfo).port)}`;
          resolve();
        });
      }),
    drain: () =>
      new Promise<void>((resolve) => {
        stopping = true;
        if (!server.listening) return resolve();
        const idle = setInterval(() => server.closeIdleConnections(), DRAIN_POLL_MS);
        const deadline = setTimeout(() => server.closeAllConnections(), drainMs);
        server.close(() => {
          clearInterval(idle);
          clearTimeout(deadline);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
  return listener;
}
