/**
 * How many connections `serve` holds, and for whom: no more than --max-connections at once, no
 * more than --max-connections-per-address from one client address, and, when the server nears its
 * cap, idle keep-alive connections are closed to make room for new ones. Without these, one
 * address could hold every slot with idle or slow sockets and lock everyone else out.
 */
import { isIPv4, isIPv6, type Server, type Socket } from 'node:net';
import { addressBucket, trustedProxies } from '../core/index.js';

/** The default share of --max-connections one address may hold. */
export function defaultPerAddress(maxConnections: number): number {
  return Math.max(1, Math.floor(maxConnections / 10));
}

/** From this share of the cap on, idle connections give way to new ones. */
const PRESSURE = 0.9;

export interface ConnectionLimits {
  maxConnections: number;
  /** 0: no limit per address. */
  perAddress: number;
  /** Proxies (--trust-proxy): each connection of theirs may carry any client, so they are not limited per address. */
  trustProxy: readonly string[];
}

type HttpServer = Server & { closeIdleConnections?(): void };

/**
 * Applies the limits to a Node HTTP(S) server. The address is the socket's peer: no header can be
 * read, let alone trusted, before a connection is accepted. An excess connection is destroyed at
 * once, before TLS or a request is read: answering it would cost what the limit saves.
 */
export function limitConnections(server: HttpServer, limits: ConnectionLimits): void {
  server.maxConnections = limits.maxConnections;
  const proxies = trustedProxies(limits.trustProxy);
  const isProxy = (peer: string) => (isIPv4(peer) ? proxies.check(peer, 'ipv4') : isIPv6(peer) && proxies.check(peer, 'ipv6'));
  const nearCap = Math.max(1, Math.floor(limits.maxConnections * PRESSURE));
  const held = new Map<string, number>();
  let open = 0;

  // A keep-alive connection between requests is the one to give up: its client reconnects for its
  // next request. One awaiting its first request or in the middle of one is never idle in Node's
  // sense, and is left to --header-timeout.
  const makeRoom = () => server.closeIdleConnections?.();

  // Before HTTP (or TLS) sets the socket up, so a refused one costs nothing more.
  server.prependListener('connection', (socket: Socket) => {
    const peer = socket.remoteAddress;
    if (peer === undefined) return; // already closed by its client
    const bucket = limits.perAddress > 0 && !isProxy(peer) ? addressBucket(peer) : null;
    if (bucket !== null) {
      const count = held.get(bucket) ?? 0;
      if (count >= limits.perAddress) {
        socket.destroy();
        return;
      }
      held.set(bucket, count + 1);
    }
    open++;
    socket.once('close', () => {
      open--;
      if (bucket === null) return;
      const count = held.get(bucket)! - 1;
      if (count === 0) held.delete(bucket);
      else held.set(bucket, count);
    });
    if (open >= nearCap) makeRoom();
  });
  // A connection dropped at the cap: its client is lost, the next one finds room.
  server.on('drop', makeRoom);
}
