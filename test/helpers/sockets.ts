/**
 * Raw client sockets against a server on loopback, each from a chosen local address: all of
 * 127.0.0.0/8 is loopback on Linux, so 127.0.0.2, 127.0.0.3 … play distinct clients.
 */
import http from 'node:http';
import net from 'node:net';

/** A socket from one address that says whether the server has closed it. */
export interface Held {
  socket: net.Socket;
  closed(): boolean;
}

/** Connects from `localAddress` and sends `send`: nothing leaves the socket idle, part of a request makes it a slow one. */
export function hold(port: number, localAddress: string, send = ''): Promise<Held> {
  return new Promise((resolve) => {
    let closed = false;
    const socket = net.connect({ port, host: '127.0.0.1', localAddress }, () => {
      if (send) socket.write(send);
      resolve({ socket, closed: () => closed });
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      closed = true;
      resolve({ socket, closed: () => true });
    });
  });
}

/** The start of a request whose headers never finish. */
export const SLOW_HEADERS = 'GET /jwks HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ';

/** The body of the token request `inRequest` begins: without a client, it is answered 401. */
const TOKEN_BODY = 'grant_type=none';

/**
 * A socket from `localAddress` in the middle of a request: the head of a POST to /token has been
 * read by the server (it answered `100 Continue`), its body is still to come (`answerTo(held, REST_OF_BODY)`).
 */
export function inRequest(port: number, localAddress: string): Promise<Held> {
  return new Promise((resolve, reject) => {
    let closed = false;
    let answer = '';
    const socket = net.connect({ port, host: '127.0.0.1', localAddress }, () =>
      socket.write(
        `POST /token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${TOKEN_BODY.length}\r\nExpect: 100-continue\r\n\r\n`,
      ),
    );
    const onData = (chunk: Buffer) => {
      answer += chunk.toString();
      if (!answer.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      if (answer.startsWith('HTTP/1.1 100 ')) resolve({ socket, closed: () => closed });
      else reject(new Error(`answered before its body: ${answer}`));
    };
    socket.on('data', onData);
    socket.on('error', () => {});
    socket.on('close', () => {
      closed = true;
      reject(new Error(`closed before its request began: ${answer}`));
    });
  });
}

/** What completes the request `inRequest` began, and the head `SLOW_HEADERS` began. */
export const REST_OF_BODY = TOKEN_BODY;
export const REST_OF_HEADERS = '1\r\n\r\n';

/** Sends `rest` on a held socket: the status of the answer, or 0 when the socket closes without one. */
export function answerTo(held: Held, rest: string): Promise<number> {
  return new Promise((resolve) => {
    let answer = '';
    if (held.closed()) return resolve(0);
    held.socket.on('data', (chunk) => {
      answer += chunk.toString();
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(answer);
      if (status) resolve(Number(status[1]));
    });
    held.socket.once('close', () => resolve(0));
    held.socket.write(rest);
  });
}

/** A keep-alive socket from `localAddress` that has been answered one GET of `path` and is now idle. */
export function keepAlive(port: number, localAddress: string, path = '/jwks'): Promise<Held> {
  return new Promise((resolve, reject) => {
    let closed = false;
    let answer = '';
    const socket = net.connect({ port, host: '127.0.0.1', localAddress }, () => socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`));
    socket.on('data', (chunk) => {
      answer += chunk.toString();
      const head = answer.indexOf('\r\n\r\n');
      const length = Number(/content-length: (\d+)/i.exec(answer)?.[1]);
      if (head >= 0 && answer.length >= head + 4 + length) resolve({ socket, closed: () => closed });
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      closed = true;
      reject(new Error(`closed before its answer: ${answer}`));
    });
  });
}

/** One GET from `localAddress` on a connection of its own: the status (0 when the connection was dropped) and how long it took. */
export function getFrom(port: number, localAddress: string, path = '/jwks'): Promise<{ status: number; ms: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    const request = http.get({ host: '127.0.0.1', port, path, localAddress, agent: false, timeout: 10_000 }, (response) => {
      response.resume();
      response.on('end', () => resolve({ status: response.statusCode ?? 0, ms: Date.now() - started }));
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve({ status: 0, ms: Date.now() - started }));
  });
}

export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
