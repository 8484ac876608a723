/**
 * The server the conformance suite's resource-server scenarios run against, built as a program
 * embedding our guard builds one: the official MCP SDK behind `protectedResource` on Hono, on a
 * loopback port, with the fixtures those scenarios call (the tool `test_simple_text`, the
 * resources `test://static-text` and `test://template/{id}/data`, the prompt
 * `test_simple_prompt`). `scopesFor` names the scopes an operation needs, checked per request
 * with `protection.authenticate(request, scopes)`: a tool or resource of its own scope.
 */
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { freePort } from '../serve-process.js';
import { honoProtectedResourceMetadata, protectedResource, toMcpAuthInfo, type ProtectedResourceOptions } from '../../../src/resource-server/index.js';

export interface ProtectedMcpServer {
  /** The MCP endpoint, the resource its tokens must name. */
  url: string;
  close(): Promise<void>;
}

/** A JSON-RPC request as the scopes function sees it. */
export interface McpCall {
  method: string;
  params: Record<string, unknown>;
}

function fixtures(): McpServer {
  const server = new McpServer({ name: 'conformance fixtures', version: '1.0.0' });
  server.registerTool('test_simple_text', { description: 'Returns a text' }, () => ({
    content: [{ type: 'text', text: 'This is a simple text response for testing.' }],
  }));
  server.registerResource('static-text', 'test://static-text', { mimeType: 'text/plain' }, (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }],
  }));
  server.registerResource('template', new ResourceTemplate('test://template/{id}/data', { list: undefined }), { mimeType: 'text/plain' }, (uri, { id }) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: `Data for ${String(id)}` }],
  }));
  server.registerPrompt('test_simple_prompt', { description: 'A prompt' }, () => ({
    messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
  }));
  return server;
}

/** Listens on 127.0.0.1:`port` (default: a free one); `guard` is everything but `resource`, which is this server's /mcp. */
export async function startProtectedMcpServer(
  guard: Omit<ProtectedResourceOptions, 'resource'>,
  options: { port?: number; scopesFor?: (call: McpCall) => string[] } = {},
): Promise<ProtectedMcpServer> {
  const port = options.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}/mcp`;
  const protection = protectedResource({ ...guard, resource: url });
  const app = new Hono();
  honoProtectedResourceMetadata(app, protection);
  app.post('/mcp', async (c) => {
    const call = (await c.req.raw.clone().json()) as McpCall;
    const checked = await protection.authenticate(c.req.raw, options.scopesFor?.({ method: call.method, params: call.params ?? {} }) ?? []);
    if (!checked.ok) return checked.response;
    const mcp = fixtures();
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await mcp.connect(transport);
    const response = await transport.handleRequest(c.req.raw, { authInfo: toMcpAuthInfo(checked.auth, protection.resource) });
    for (const [name, value] of Object.entries(checked.headers ?? {})) response.headers.set(name, value);
    return response;
  });
  const server = await new Promise<ServerType>((resolve) => {
    const listening: ServerType = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' }, () => resolve(listening));
  });
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        (server as unknown as { closeAllConnections(): void }).closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
