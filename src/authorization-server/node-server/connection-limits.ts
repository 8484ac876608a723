/**
 * How many connections the listener holds, and for whom: no more than `maxConnections` at once,
 * and no more than `maxConnectionsPerAddress` from one client address (serve's --max-connections
 * and --max-connections-per-address). At the cap, a new connection takes the place of the oldest
 * one that has no request in progress. Without this, sockets that sit idle or send their headers
 * slowly, spread over enough addresses, could hold every slot until their timeouts and lock
 * everyone else out.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIPv4, isIPv6, type Server, type Socket } from 'node:net';
import { addressBucket, trustedProxies } from '../../core/client-address.js';

/** The default share of `maxConnections` one address may hold. */
export function defaultPerAddress(maxConnections: number): number {
  return Math.max(1, Math.floor(maxConnections / 10));
}

export interface ConnectionLimits {
  maxConnections: number;
  /** 0: no limit per address. */
  perAddress: number;
  /** Proxies (`trustProxy`): each connection of theirs may carry any client, so they are not limited per address. */
  trustProxy: readonly string[];
}

interface Connection {
  socket: Socket;
  key: string;
  /** The per-address count it is part of; null when its peer is not limited per address. */
  bucket: string | null;
  /** Requests whose head has arrived and whose response has not ended. */
  requests: number;
  released: boolean;
}

/**
 * Both ends of a connection: the same for the TCP socket and for the TLS socket over it, and
 * never shared by two open connections.
 */
function endsOf(socket: Socket): string {
  return `${socket.localAddress}|${socket.localPort}|${socket.remoteAddress}|${socket.remotePort}`;
}

/**
 * Applies the limits to a Node HTTP(S) server. The address is the socket's peer: no header can be
 * read, let alone trusted, before a connection is accepted. A refused connection is destroyed at
 * once, before TLS or a request is read: answering it would cost what the limit saves.
 */
export function limitConnections(server: Server, limits: ConnectionLimits): void {
  const proxies = trustedProxies(limits.trustProxy);
  const isProxy = (peer: string) => (isIPv4(peer) ? proxies.check(peer, 'ipv4') : isIPv6(peer) && proxies.check(peer, 'ipv6'));
  const open = new Set<Connection>();
  // Found again by the socket a request arrives on: the TCP socket, or over TLS the TLS socket,
  // matched to its TCP connection once, by their two ends, when its handshake completes.
  const bySocket = new WeakMap<Socket, Connection>();
  const byEnds = new Map<string, Connection>();
  const byBucket = new Map<string, Set<Connection>>();
  // The connections without a request in progress (idle between requests, in the TLS handshake,
  // or still sending a head), the one longest without a request first. They are the ones to give
  // up: none holds work begun, and a client that is sending its head now is the newest here.
  const evictable = new Set<Connection>();

  const release = (connection: Connection) => {
    if (connection.released) return;
    connection.released = true;
    open.delete(connection);
    // A new connection with the same ends may have taken the entry already.
    if (byEnds.get(connection.key) === connection) byEnds.delete(connection.key);
    evictable.delete(connection);
    if (connection.bucket === null) return;
    const sameAddress = byBucket.get(connection.bucket)!;
    sameAddress.delete(connection);
    if (sameAddress.size === 0) byBucket.delete(connection.bucket);
  };

  /**
   * How many connections an address holds. A socket destroyed this turn of the event loop (a
   * timeout, an eviction) emits 'close' only after new connections may have been accepted, and
   * its client's next connection must not be refused for it.
   */
  const heldBy = (bucket: string): number => {
    const sameAddress = byBucket.get(bucket);
    if (!sameAddress || sameAddress.size < limits.perAddress) return sameAddress?.size ?? 0;
    for (const connection of sameAddress) if (connection.socket.destroyed) release(connection);
    return byBucket.get(bucket)?.size ?? 0;
  };

  /** Closes the oldest connection without a request in progress; false when every one has one. */
  const evictOldest = (): boolean => {
    const oldest = evictable.values().next();
    if (oldest.done) return false;
    release(oldest.value);
    oldest.value.socket.destroy();
    return true;
  };

  // Before HTTP (or TLS) sets the socket up, so a refused one costs nothing more.
  server.prependListener('connection', (socket: Socket) => {
    const peer = socket.remoteAddress;
    if (peer === undefined) return; // already closed by its client
    const bucket = limits.perAddress > 0 && !isProxy(peer) ? addressBucket(peer) : null;
    // Over its address's share, or at the cap with every connection in a request: refused.
    if ((bucket !== null && heldBy(bucket) >= limits.perAddress) || (open.size >= limits.maxConnections && !evictOldest())) {
      socket.destroy();
      return;
    }
    const connection: Connection = { socket, key: endsOf(socket), bucket, requests: 0, released: false };
    open.add(connection);
    bySocket.set(socket, connection);
    byEnds.set(connection.key, connection);
    evictable.add(connection);
    if (bucket !== null) byBucket.set(bucket, (byBucket.get(bucket) ?? new Set()).add(connection));
    socket.once('close', () => release(connection));
  });

  server.on('secureConnection', (socket: Socket) => {
    const connection = byEnds.get(endsOf(socket));
    if (connection) bySocket.set(socket, connection);
  });

  // A request's head has arrived: its connection holds work until the response ends, then goes to
  // the back of the line.
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const connection = bySocket.get(request.socket);
    if (!connection) return;
    connection.requests++;
    evictable.delete(connection);
    response.once('close', () => {
      connection.requests--;
      if (connection.requests === 0 && !connection.released) evictable.add(connection);
    });
  });
}
