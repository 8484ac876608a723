/**
 * A client of a protected MCP server: signs in through the browser the first time (the tokens are
 * kept in ~/.config/context-auth/credentials.json, or $CONTEXT_AUTH_CREDENTIALS), then calls tools
 * with the official MCP SDK, and once more with a plain fetch.
 *
 *   node --import tsx examples/client.ts http://127.0.0.1:3000/mcp
 *
 * When no browser can open, the sign-in URL is printed instead. Open it on this machine: the
 * sign-in ends with a redirect to this machine's 127.0.0.1 (over SSH, forward that port).
 */
// #region sdk
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ContextClient, createAuthFetch } from 'context-auth/client';

const serverUrl = process.argv[2] ?? 'http://127.0.0.1:3000/mcp';

const contextClient = new ContextClient({
  serverUrl,
  clientName: 'context-auth example client', // shown on the consent page
  onProgress: (message) => console.error(message), // discovery steps, and the sign-in URL if no browser opens
});
// Sign in now if nothing is stored, so the browser is not raced by the SDK's 60 s request timeout.
await contextClient.accessToken();

const mcp = new Client({ name: 'context-auth-example', version: '1.0.0' });
// contextClient.fetch adds the bearer token, refreshes it, and signs in again when the server says 401.
await mcp.connect(new StreamableHTTPClientTransport(new URL(serverUrl), { fetch: contextClient.fetch }));
const whoami = await mcp.callTool({ name: 'whoami', arguments: {} });
const echo = await mcp.callTool({ name: 'echo', arguments: { text: 'hello' } });
await mcp.close();
// #endregion sdk
console.log(JSON.stringify({ whoami: whoami.content, echo: echo.content }));

// #region fetch
// Without the SDK: a fetch that authorizes on its own (the same application, so the same stored
// tokens and no second sign-in).
const authFetch = createAuthFetch({ serverUrl, clientName: 'context-auth example client', onProgress: (message) => console.error(message) });
const response = await authFetch(serverUrl, {
  method: 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
});
const { result } = (await response.json()) as { result: { tools: { name: string }[] } };
// #endregion fetch
console.log(JSON.stringify({ tools: result.tools.map((tool) => tool.name) }));
