/**
 * The upstream of bench/gateway.ts, in a process of its own so that it shares no event loop with
 * the load generator: a plain Node server that answers every request, once its body has arrived,
 * with the same small JSON-RPC result: as JSON with its length, or at /events as an event stream
 * of that one message (as the MCP SDKs' servers answer a POST by default). Prints its port.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const ANSWER = JSON.stringify({ jsonrpc: '2.0', id: 1, result: {} });
const EVENT = `event: message\ndata: ${ANSWER}\n\n`;

const server = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    if (request.url === '/events') response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }).end(EVENT);
    else response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(ANSWER) }).end(ANSWER);
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
