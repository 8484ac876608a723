/**
 * Our client against a server nobody here wrote: the official MCP SDK's example
 * (`examples/server/simpleStreamableHttp.js`, @modelcontextprotocol/sdk 1.32.x) with its demo OAuth
 * provider, run as a child process — once with `--oauth`, once with `--oauth --oauth-strict`, where
 * the authorization server refuses a code whose request named no (or another) `resource` and the
 * MCP server refuses tokens whose audience is not itself.
 *
 * The example serves the MCP endpoint on MCP_PORT and a separate authorization server on
 * MCP_AUTH_PORT (both on localhost); its authorization endpoint approves at once and redirects to
 * the client. `ContextClient` does discovery (RFC 9728 from the 401), registration (RFC 7591),
 * PKCE and the code exchange; the "browser" here fetches the authorization URL without following
 * the redirect and delivers its Location to our loopback callback. The MCP SDK's own client then
 * talks to the example through `contextClient.fetch`.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes, createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ContextClient } from '../../src/client/session.js';
import { MemoryTokenStore } from '../../src/client/token-store.js';
import { freePort } from './serve-process.js';

const EXAMPLE = resolve(import.meta.dirname, '../../node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js');

interface Recorded {
  method: string;
  url: string;
  status: number;
  authorization: string | null;
  body?: string;
}

interface Example {
  process: ChildProcessWithoutNullStreams;
  output(): string;
  stop(): Promise<void>;
}

/** Starts the example in its own process group and waits until both its servers listen. */
async function startExample(flags: string[], mcpPort: number, authPort: number): Promise<Example> {
  const child = spawn(process.execPath, [EXAMPLE, ...flags], {
    stdio: 'pipe',
    detached: true,
    env: { ...process.env, MCP_PORT: String(mcpPort), MCP_AUTH_PORT: String(authPort) },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      return;
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // gone already
      }
    }, 5_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await new Promise<void>((resolvePromise, reject) => {
      const timer = setTimeout(() => reject(new Error(`the SDK example did not start:\n${output}`)), 15_000);
      const check = (): void => {
        if (
          output.includes(`MCP Streamable HTTP Server listening on port ${mcpPort}`) &&
          output.includes(`OAuth Authorization Server listening on port ${authPort}`)
        ) {
          clearTimeout(timer);
          resolvePromise();
        }
      };
      child.stdout.on('data', check);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the SDK example exited with ${code}:\n${output}`));
      });
    });
  } catch (error) {
    await stop();
    throw error;
  }
  return { process: child, output: () => output, stop };
}

/** True while any process of the group is alive. */
function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

for (const variant of [
  { name: '--oauth', flags: ['--oauth'], strict: false },
  { name: '--oauth --oauth-strict', flags: ['--oauth', '--oauth-strict'], strict: true },
]) {
  describe(`ContextClient and the MCP SDK client against the SDK example server (${variant.name})`, { timeout: 300_000 }, () => {
    let example: Example;
    let mcpUrl: string;
    let authOrigin: string;
    const recorded: Recorded[] = [];
    const authorizationUrls: URL[] = [];
    const progress: string[] = [];
    const store = new MemoryTokenStore();

    /** Plain fetch, recording what the client sent and got. */
    const recordingFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const request = new Request(input, init);
      const body = request.method === 'POST' ? await request.clone().text() : undefined;
      const response = await fetch(request);
      recorded.push({
        method: request.method,
        url: request.url,
        status: response.status,
        authorization: request.headers.get('authorization'),
        ...(body !== undefined ? { body } : {}),
      });
      return response;
    };

    let contextClient: ContextClient;

    before(async () => {
      const mcpPort = await freePort();
      let authPort = await freePort();
      while (authPort === mcpPort) authPort = await freePort();
      example = await startExample(variant.flags, mcpPort, authPort);
      mcpUrl = `http://localhost:${mcpPort}/mcp`;
      authOrigin = `http://localhost:${authPort}`;
      contextClient = new ContextClient({
        serverUrl: mcpUrl,
        store,
        fetch: recordingFetch,
        clientName: 'context-auth e2e',
        authorizationTimeoutMs: 15_000,
        onProgress: (message) => progress.push(message),
        // The person's browser: the example approves at once and redirects to our loopback.
        openAuthorizationUrl: async (url) => {
          authorizationUrls.push(url);
          const answer = await fetch(url, { redirect: 'manual' });
          const location = answer.headers.get('location');
          if (answer.status !== 302 || !location) throw new Error(`the example's authorization endpoint answered ${answer.status}: ${await answer.text()}`);
          const page = await fetch(location);
          await page.text();
        },
      });
    });

    after(async () => {
      const pid = example?.process.pid;
      await example?.stop();
      if (pid !== undefined) assert.equal(groupAlive(pid), false, 'no process of the example is left');
    });

    it('connects, lists tools and calls one, authorizing on the first 401', async () => {
      const client = new Client({ name: 'context-auth e2e', version: '0.0.0' }, { capabilities: {} });
      const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { fetch: contextClient.fetch });
      try {
        await client.connect(transport);
        assert.equal(client.getServerVersion()?.name, 'simple-streamable-http-server');
        const { tools } = await client.listTools();
        assert.ok(
          tools.some((tool) => tool.name === 'greet'),
          `tools: ${tools.map((tool) => tool.name).join(', ')}`,
        );
        const result = await client.callTool({ name: 'greet', arguments: { name: 'context-auth' } });
        assert.deepEqual(result.content, [{ type: 'text', text: 'Hello, context-auth!' }]);
        await transport.terminateSession();
      } finally {
        await client.close();
      }
      assert.equal(authorizationUrls.length, 1, 'one authorization');
    });

    it('discovered the authorization server through the protected resource metadata (revision B)', async () => {
      const grant = await contextClient.grant();
      assert.ok(grant, 'a stored grant');
      assert.equal(grant.revision, 'B');
      assert.equal(grant.resource, mcpUrl);
      assert.equal(new URL(grant.issuer).origin, authOrigin);
      assert.equal(grant.scope, 'mcp:tools');

      const gets = recorded.filter((r) => r.method === 'GET').map((r) => `${r.url} ${r.status}`);
      assert.ok(gets.includes(`http://localhost:${new URL(mcpUrl).port}/.well-known/oauth-protected-resource/mcp 200`), gets.join('\n'));
      assert.ok(gets.includes(`${authOrigin}/.well-known/oauth-authorization-server 200`), gets.join('\n'));
      assert.ok(
        progress.some((line) => line.includes('/.well-known/oauth-protected-resource/mcp')),
        progress.join('\n'),
      );

      const registration = recorded.find((r) => r.url === `${authOrigin}/register`);
      assert.equal(registration?.status, 201);
    });

    it('sent resource on the authorization request and the code exchange', () => {
      const [authorizationUrl] = authorizationUrls;
      assert.equal(authorizationUrl?.origin + authorizationUrl!.pathname, `${authOrigin}/authorize`);
      assert.equal(authorizationUrl!.searchParams.get('resource'), mcpUrl);
      assert.equal(authorizationUrl!.searchParams.get('code_challenge_method'), 'S256');
      assert.equal(authorizationUrl!.searchParams.get('scope'), 'mcp:tools');

      const token = recorded.find((r) => r.url === `${authOrigin}/token` && r.method === 'POST');
      assert.equal(token?.status, 200);
      const form = new URLSearchParams(token!.body);
      assert.equal(form.get('grant_type'), 'authorization_code');
      assert.equal(form.get('resource'), mcpUrl);
      assert.ok(form.get('code_verifier'));
    });

    it('sent the token to the MCP server only, on every request after the login', async () => {
      const grant = await contextClient.grant();
      const mcpRequests = recorded.filter((r) => r.url === mcpUrl);
      // The probe and the SDK's first initialize go without a token, and are answered 401.
      const withoutToken = mcpRequests.filter((r) => r.authorization === null);
      assert.ok(withoutToken.length >= 1 && withoutToken.every((r) => r.status === 401), JSON.stringify(withoutToken));
      const withToken = mcpRequests.filter((r) => r.authorization !== null);
      assert.ok(withToken.length >= 3, `initialize, tools/list, tools/call: ${withToken.length}`);
      for (const r of withToken) {
        assert.equal(r.authorization, `Bearer ${grant!.accessToken}`);
        assert.ok(r.status < 400, `${r.method} ${r.url} answered ${r.status}`);
      }
      for (const r of recorded.filter((r) => !r.url.startsWith(mcpUrl))) assert.equal(r.authorization, null, `no bearer token to ${r.url}`);
    });

    it(
      variant.strict
        ? 'its authorization server refuses a code requested without resource'
        : 'its authorization server accepts a code requested without resource',
      async () => {
        // The contrast that shows what `resource` is worth: the same flow by hand, without it.
        const registered = await fetch(`${authOrigin}/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            client_name: 'no resource',
            redirect_uris: ['http://127.0.0.1:1/callback'],
            token_endpoint_auth_method: 'none',
            grant_types: ['authorization_code'],
            response_types: ['code'],
          }),
        });
        assert.equal(registered.status, 201);
        const { client_id: clientId } = (await registered.json()) as { client_id: string };
        const verifier = randomBytes(32).toString('base64url');
        const challenge = createHash('sha256').update(verifier).digest('base64url');
        const query = new URLSearchParams({
          response_type: 'code',
          client_id: clientId,
          redirect_uri: 'http://127.0.0.1:1/callback',
          code_challenge: challenge,
          code_challenge_method: 'S256',
          state: 's',
        });
        const answer = await fetch(`${authOrigin}/authorize?${query}`, { redirect: 'manual' });
        assert.equal(answer.status, 302);
        const code = new URL(answer.headers.get('location')!).searchParams.get('code')!;
        const token = await fetch(`${authOrigin}/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            grant_type: 'authorization_code',
            code,
            code_verifier: verifier,
            redirect_uri: 'http://127.0.0.1:1/callback',
            client_id: clientId,
          }),
        });
        if (variant.strict) assert.notEqual(token.status, 200, await token.text());
        else assert.equal(token.status, 200, await token.text());
      },
    );
  });
}
