/**
 * The upstream of bench/gateway.ts, in a process of its own so that it shares no event loop with
 * the load generator: a plain Node server that answers every request, once its body has arrived,
 * with the same small JSON-RPC result and its length. Prints its port.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const ANSWER = JSON.stringify({ jsonrpc: '2.0', id: 1, result: {} });

const server = createServer((request, response) => {
  request.resume();
  request.on('end', () => response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(ANSWER) }).end(ANSWER));
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
