/**
 * A stdio context server behind the gateway: one child process per MCP session, started by the
 * session's `initialize` and ended with it (a DELETE, the child exiting, or idleness). The
 * gateway speaks Streamable HTTP to the client with the SDK's own server transport, and relays
 * each JSON-RPC message to the child's stdin and back from its stdout.
 *
 * The child's environment is the operator's: a few basics (PATH, HOME…) and the variables the
 * operator names, never anything from the person's token (spec: stdio servers take their
 * credentials from the environment).
 */
import { randomUUID } from 'node:crypto';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { isInitializeRequest, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { jsonRpcError, sessionNotFound } from './gateway-errors.js';
import { StderrLines } from './stderr-lines.js';
import type { Forwarded, GatewayRequest, Upstream } from './upstream.js';
import { commandHealth, type UpstreamHealth } from './upstream-health.js';

export interface StdioUpstreamOptions {
  command: string;
  args: string[];
  /** The child's environment beyond the basics: the operator's, never the person's. */
  env?: Record<string, string>;
  /** Children running at once; a new session past it is 503. */
  maxSessions: number;
  /** A session without a request for this long is ended, its child killed (ms). */
  idleMs: number;
  /**
   * Where the children's stderr goes, line by line, bounded (stderr-lines.ts); `pid` names the
   * child, null for a line about them all. Without it, their stderr is discarded.
   */
  stderr?: (line: string, pid: number | null) => void;
}

/** Largest JSON-RPC message read from a child's stdout. */
const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

interface Session {
  http: WebStandardStreamableHTTPServerTransport;
  child: StdioClientTransport;
  idle: NodeJS.Timeout;
}

export class StdioUpstream implements Upstream {
  private readonly sessions = new Map<string, Session>();
  /** Children started whose initialize has not been answered yet: they count towards the bound. */
  private starting = 0;

  /** One for every child of this upstream, so that together they are bounded. */
  private readonly stderrLines: StderrLines | undefined;

  constructor(private readonly options: StdioUpstreamOptions) {
    this.stderrLines = options.stderr ? new StderrLines(options.stderr) : undefined;
  }

  /** Children running now. */
  runningSessions(): number {
    return this.sessions.size + this.starting;
  }

  /** Whether the command can be run, found as spawn finds it: in the PATH the children get. */
  health(): Promise<UpstreamHealth> {
    return commandHealth(this.options.command, this.options.env?.PATH ?? process.env.PATH);
  }

  async forward(request: GatewayRequest): Promise<Forwarded> {
    const sessionId = request.headers.get('mcp-session-id');
    if (sessionId !== null) {
      const session = this.sessions.get(sessionId);
      if (!session) return answered(sessionNotFound());
      session.idle.refresh();
      return answered(await session.http.handleRequest(webRequest(request)));
    }
    if (request.method !== 'POST') return answered(jsonRpcError(400, -32000, 'Bad Request: Mcp-Session-Id header is required'));
    let body: unknown;
    try {
      body = JSON.parse(utf8.decode(request.body));
    } catch {
      return answered(jsonRpcError(400, -32700, 'Parse error'));
    }
    // Only an initialize starts a child: anything else without a session costs no process.
    if (!isInitializeRequest(body)) return answered(jsonRpcError(400, -32000, 'Bad Request: Mcp-Session-Id header is required'));
    if (this.runningSessions() >= this.options.maxSessions) {
      return answered(
        Response.json(
          { error: 'temporarily_unavailable', error_description: 'this upstream runs as many sessions as it may; try again later' },
          { status: 503, headers: { 'Retry-After': '30', 'Cache-Control': 'no-store' } },
        ),
      );
    }
    return this.start(webRequest(request), body);
  }

  /** Ends every session and its child. */
  async close(): Promise<void> {
    await Promise.all([...this.sessions.keys()].map((id) => this.end(id)));
  }

  private async start(request: Request, body: unknown): Promise<Forwarded> {
    this.starting++;
    const child = new StdioClientTransport({
      command: this.options.command,
      args: this.options.args,
      env: this.options.env ?? {},
      stderr: this.stderrLines ? 'pipe' : 'ignore',
      maxBufferSize: MAX_MESSAGE_BYTES,
    } as ConstructorParameters<typeof StdioClientTransport>[0]);
    // A stream of its own, read apart from stdout: nothing of it reaches the protocol.
    if (this.stderrLines && child.stderr) this.stderrLines.read(child.stderr, () => child.pid);
    let session: Session | undefined;
    const http: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => {
        session = { http, child, idle: setTimeout(() => void this.end(id), this.options.idleMs) };
        session.idle.unref();
        this.sessions.set(id, session);
      },
      onsessionclosed: (id) => void this.end(id),
    });
    relay(http, child, () => {
      if (http.sessionId !== undefined) void this.end(http.sessionId);
    });
    try {
      await http.start();
      await child.start();
    } catch {
      this.starting--;
      await http.close().catch(() => {});
      return {
        response: Response.json({ error: 'bad_gateway', error_description: 'the upstream context server could not be started' }, { status: 502 }),
        outcome: { kind: 'failed', failure: 'unreachable' },
      };
    }
    try {
      const response = await http.handleRequest(request, { parsedBody: body });
      if (!session) await Promise.all([child.close(), http.close()]).catch(() => {});
      return answered(response);
    } finally {
      this.starting--;
    }
  }

  private async end(id: string): Promise<void> {
    const session = this.sessions.get(id);
    if (!session) return;
    this.sessions.delete(id);
    clearTimeout(session.idle);
    await Promise.all([session.child.close().catch(() => {}), session.http.close().catch(() => {})]);
  }
}

/**
 * Messages both ways. A progress notification from the child goes on the stream of the request
 * that asked for it (by its progress token), so the client sees it while the call runs; other
 * notifications and the child's own requests go on the session's standalone stream.
 */
function relay(http: WebStandardStreamableHTTPServerTransport, child: StdioClientTransport, ended: () => void): void {
  const progressRequests = new Map<string | number, RequestId>();
  http.onmessage = (message) => {
    const token = progressTokenOf(message);
    if (token !== undefined && 'id' in message && message.id !== undefined) progressRequests.set(token, message.id);
    child.send(message).catch(ended);
  };
  child.onmessage = (message) => {
    let relatedRequestId: RequestId | undefined;
    if ('method' in message && message.method === 'notifications/progress')
      relatedRequestId = progressRequests.get((message.params as { progressToken: string | number }).progressToken);
    if ('id' in message && !('method' in message)) {
      for (const [token, id] of progressRequests) if (id === message.id) progressRequests.delete(token);
    }
    http.send(message, relatedRequestId === undefined ? undefined : { relatedRequestId }).catch(() => {});
  };
  child.onclose = ended;
  http.onclose = ended;
}

function progressTokenOf(message: JSONRPCMessage): string | number | undefined {
  if (!('method' in message) || !('id' in message)) return undefined;
  const token = (message.params as { _meta?: { progressToken?: unknown } } | undefined)?._meta?.progressToken;
  return typeof token === 'string' || typeof token === 'number' ? token : undefined;
}

const utf8 = new TextDecoder();

/** The request as the SDK's transport takes it: a Web Request, its body the one the route read. */
function webRequest(request: GatewayRequest): Request {
  // Read from a socket or from a Request: never in shared memory.
  const body = request.body as Uint8Array<ArrayBuffer> | undefined;
  return new Request(request.url, { method: request.method, headers: request.headers, ...(body === undefined ? {} : { body }) });
}

function answered(response: Response): Forwarded {
  return { response, outcome: { kind: 'answered', status: response.status, sessionId: response.headers.get('mcp-session-id') } };
}
