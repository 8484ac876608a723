/**
 * Context servers for the gateway to stand in front of, in this process so that a test sees what
 * they received: the official MCP SDK's server (`@modelcontextprotocol/sdk` 1.x) over Streamable
 * HTTP with sessions, a server that never answers, and one that dies in the middle of a stream.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/** One request as the upstream received it. */
export interface ReceivedRequest {
  method: string;
  headers: IncomingHttpHeaders;
}

async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  server.close();
  await once(server, 'close').catch(() => {});
}

/** Something the test resolves when it has seen what it waits for. */
class Signal {
  private resolveIt!: () => void;
  readonly promise = new Promise<void>((resolve) => (this.resolveIt = resolve));
  fire(): void {
    this.resolveIt();
  }
}

export interface SdkUpstream {
  url: string;
  received: ReceivedRequest[];
  /** Sessions the upstream ended (a DELETE). */
  closedSessions: string[];
  /** Lets the running `wait_for_release` call finish. */
  release(): void;
  /** Sends a log message on each open session's standalone stream (the GET). */
  notifyAll(text: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * The SDK's server with sessions: `echo`, and `wait_for_release`, which reports progress at once
 * and then waits for the test's release, so a test sees the progress arrive while the call runs.
 * `check` is given each request's Authorization header first; a string it returns is a refusal (401).
 */
export async function sdkUpstream(check?: (authorization: string | undefined) => Promise<string | undefined>): Promise<SdkUpstream> {
  const received: ReceivedRequest[] = [];
  const closedSessions: string[] = [];
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: McpServer }>();
  let releaseSignal = new Signal();

  const mcpServer = (): McpServer => {
    const server = new McpServer({ name: 'gateway-upstream', version: '1.0.0' }, { capabilities: { logging: {} } });
    server.registerTool('echo', { description: 'Says back what it is given.', inputSchema: { text: z.string() } }, ({ text }) => ({
      content: [{ type: 'text', text }],
    }));
    server.registerTool('wait_for_release', { description: 'Reports progress, then waits for the test.' }, async (extra) => {
      const progressToken = extra._meta?.progressToken;
      if (progressToken !== undefined) {
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: 1, total: 2, message: 'started' } });
      }
      await releaseSignal.promise;
      releaseSignal = new Signal();
      return { content: [{ type: 'text', text: 'released' }] };
    });
    return server;
  };

  const http = createServer((request, response) => {
    received.push({ method: request.method ?? '', headers: request.headers });
    void (async () => {
      if (check) {
        const refusal = await check(request.headers.authorization);
        if (refusal !== undefined)
          return response.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'invalid_token', error_description: refusal }));
      }
      const sessionId = request.headers['mcp-session-id'];
      const existing = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
      if (existing) return existing.transport.handleRequest(request, response);
      if (sessionId !== undefined) return response.writeHead(404).end();
      const server = mcpServer();
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (id) => void sessions.set(id, { transport, server }),
        onsessionclosed: (id) => {
          sessions.delete(id);
          closedSessions.push(id);
        },
      });
      await server.connect(transport);
      await transport.handleRequest(request, response);
    })().catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500).end(String(error));
    });
  });
  const url = await listen(http);
  return {
    url,
    received,
    closedSessions,
    release: () => releaseSignal.fire(),
    notifyAll: async (text) => {
      for (const { server } of sessions.values()) await server.server.sendLoggingMessage({ level: 'info', data: text });
    },
    close: async () => {
      for (const { server } of sessions.values()) await server.close().catch(() => {});
      await close(http);
    },
  };
}

export interface HangingUpstream {
  url: string;
  /** Resolves when a request has arrived (and will never be answered). */
  arrived: Promise<void>;
  close(): Promise<void>;
}

/** Accepts requests and never answers them. */
export async function hangingUpstream(): Promise<HangingUpstream> {
  const arrived = new Signal();
  const http = createServer(() => arrived.fire());
  return { url: await listen(http), arrived: arrived.promise, close: () => close(http) };
}

export interface DyingUpstream {
  url: string;
  /** Ends the event stream under way by destroying its connection, as a crash would. */
  die(): void;
  close(): Promise<void>;
}

/** Answers a POST with an event stream, sends one event, and keeps it open until the test makes it die. */
export async function dyingUpstream(): Promise<DyingUpstream> {
  const open: ServerResponse[] = [];
  const http = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    response.write(
      `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } })}\n\n`,
    );
    open.push(response);
  });
  return {
    url: await listen(http),
    die: () => {
      for (const response of open.splice(0)) response.socket?.destroy();
    },
    close: () => close(http),
  };
}
