/**
 * `serve --gateway PATH=stdio:COMMAND`: a stdio context server (the official MCP SDK's, from
 * test/helpers/stdio-server.ts) behind the gateway, one process per MCP session. Each process
 * connects to the test when it starts, so the test sees processes start and, by that connection
 * closing, end: with their session (DELETE), when idle, and when serve stops.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MCP_HEADERS, addClient, initialize, readUntil, sdkClient, textOf, tokenFor, type MachineClient } from './gateway-clients.js';
import { freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const STDIO_SERVER = resolve(import.meta.dirname, '../helpers/stdio-server.ts');
const COMMAND = `stdio:${process.execPath} --import tsx ${STDIO_SERVER}`;

/** The stdio processes that connected, by pid, with the end of each. */
class Watch {
  readonly server: Server = createServer((socket) => this.connected(socket));
  private readonly processes = new Map<number, Socket>();
  /** Every process's end, kept after it ended. */
  private readonly endings = new Map<number, Promise<void>>();
  private waiting: ((pid: number) => void)[] = [];

  async listen(): Promise<number> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return (this.server.address() as { port: number }).port;
  }

  /** The pid of the next process to start. */
  next(): Promise<number> {
    return new Promise((resolvePid) => this.waiting.push(resolvePid));
  }

  ended(pid: number): Promise<void> {
    return this.endings.get(pid)!;
  }

  release(pid: number): void {
    this.processes.get(pid)!.write('release\n');
  }

  running(): number[] {
    return [...this.processes.keys()];
  }

  private connected(socket: Socket): void {
    const ended = once(socket, 'close').then(() => undefined);
    socket.once('data', (chunk) => {
      const pid = Number(/^pid (\d+)/.exec(chunk.toString())![1]);
      this.processes.set(pid, socket);
      this.endings.set(
        pid,
        ended.then(() => void this.processes.delete(pid)),
      );
      this.waiting.shift()?.(pid);
    });
  }
}

async function serveWithStdio(data: string, watchPort: number, extra: string[]): Promise<RunningServer> {
  // serve's environment: what the operator passes on by name reaches the processes, nothing else of it does.
  process.env.WATCH_PORT = String(watchPort);
  process.env.OPERATOR_VALUE = 'from the operator';
  process.env.CONTEXT_AUTH_GATEWAY_PROBE = 'never passed on';
  return startServe([
    '--port',
    String(await freePort()),
    '--data',
    data,
    '--quiet',
    '--gateway',
    `/files=${COMMAND}`,
    '--gateway-env',
    'WATCH_PORT',
    '--gateway-env',
    'OPERATOR_VALUE',
    ...extra,
  ]);
}

describe('serve --gateway PATH=stdio:COMMAND', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  const watch = new Watch();
  let server: RunningServer;
  let issuer: string;
  let alice: MachineClient;
  let bob: MachineClient;

  before(async () => {
    server = await serveWithStdio(data, await watch.listen(), ['--gateway-max-sessions', '2']);
    issuer = server.issuer;
    alice = await addClient(data, 'alice robot');
    bob = await addClient(data, 'bob robot');
  });
  after(async () => {
    await server?.stop();
    watch.server.close();
  });

  it("the SDK client gets a process of its own, with the operator's environment, and its progress as it comes; DELETE ends the process", async () => {
    const started = watch.next();
    const { sdk, transport } = await sdkClient(`${issuer}/files`, alice, issuer);
    const pid = await started;
    const facts = JSON.parse(textOf(await sdk.callTool({ name: 'process', arguments: {} }))) as Record<string, unknown>;
    assert.deepEqual(facts, { pid, operator_value: 'from the operator', context_auth_variables: [] });
    assert.equal(textOf(await sdk.callTool({ name: 'echo', arguments: { text: 'over stdio' } })), 'over stdio');

    let finished = false;
    let sawProgress!: () => void;
    const progressed = new Promise<void>((resolveProgress) => (sawProgress = resolveProgress));
    const call = sdk.callTool({ name: 'wait_for_release', arguments: {} }, { onprogress: () => sawProgress() }).finally(() => (finished = true));
    await progressed;
    assert.equal(finished, false, 'the progress arrived while the tool was still running');
    watch.release(pid);
    assert.equal(textOf(await call), 'released');

    await transport.terminateSession();
    await watch.ended(pid);
    await sdk.close();
  });

  it("the process's stderr reaches serve's log, a line at a time, named by the path and the pid; the call's answer is whole", async () => {
    const started = watch.next();
    const { sdk, transport } = await sdkClient(`${issuer}/files`, alice, issuer);
    const pid = await started;
    assert.equal(textOf(await sdk.callTool({ name: 'write_stderr', arguments: { text: 'a line for the log\n', times: 2 } })), 'written');
    await server.waitForOutput(new RegExp(`(\\[gateway /files pid ${pid}\\] a line for the log\n){2}`));
    await transport.terminateSession();
    await watch.ended(pid);
    await sdk.close();
  });

  it("a call's progress comes on that call's own stream, while it runs", async () => {
    const token = await tokenFor(issuer, alice, `${issuer}/files`);
    const started = watch.next();
    const opened = await fetch(`${issuer}/files`, {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` },
      body: JSON.stringify(initialize(1)),
    });
    await opened.text();
    const pid = await started;
    const session = {
      ...MCP_HEADERS,
      authorization: `Bearer ${token}`,
      'mcp-session-id': opened.headers.get('mcp-session-id')!,
      'mcp-protocol-version': '2025-06-18',
    };
    await (
      await fetch(`${issuer}/files`, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })
    ).text();
    // No GET stream is open: the progress has only the call's stream to come on.
    const call = await fetch(`${issuer}/files`, {
      method: 'POST',
      headers: session,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'wait_for_release', arguments: {}, _meta: { progressToken: 'p1' } },
      }),
    });
    assert.equal(call.headers.get('content-type'), 'text/event-stream');
    const { reader } = await readUntil(call.body!, /"progressToken":"p1"/);
    watch.release(pid);
    let rest = '';
    for (let read = await reader.read(); !read.done; read = await reader.read()) rest += new TextDecoder().decode(read.value);
    assert.match(rest, /"id":2,"result":\{"content":\[\{"type":"text","text":"released"\}\]/);
    assert.equal((await fetch(`${issuer}/files`, { method: 'DELETE', headers: session })).status, 200);
    await watch.ended(pid);
  });

  it('sessions are bounded (503 past the bound), each its own process, usable only by the client that opened it', async () => {
    const aliceToken = await tokenFor(issuer, alice, `${issuer}/files`);
    const open = async (): Promise<{ sessionId: string; pid: number }> => {
      const started = watch.next();
      const response = await fetch(`${issuer}/files`, {
        method: 'POST',
        headers: { ...MCP_HEADERS, authorization: `Bearer ${aliceToken}` },
        body: JSON.stringify(initialize(1)),
      });
      assert.equal(response.status, 200);
      await response.text();
      return { sessionId: response.headers.get('mcp-session-id')!, pid: await started };
    };
    const first = await open();
    const second = await open();
    assert.notEqual(first.pid, second.pid);
    const refused = await fetch(`${issuer}/files`, {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${aliceToken}` },
      body: JSON.stringify(initialize(1)),
    });
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get('retry-after'), '30');

    const bobToken = await tokenFor(issuer, bob, `${issuer}/files`);
    const hijack = await fetch(`${issuer}/files`, {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${bobToken}`, 'mcp-session-id': first.sessionId, 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    assert.equal(hijack.status, 404);

    const ended = await fetch(`${issuer}/files`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${aliceToken}`, 'mcp-session-id': first.sessionId, 'mcp-protocol-version': '2025-06-18' },
    });
    assert.equal(ended.status, 200);
    await watch.ended(first.pid);
    const third = await open();
    assert.deepEqual(watch.running().sort(), [second.pid, third.pid].sort());
  });

  it('a request without a session that is not an initialize starts no process', async () => {
    const token = await tokenFor(issuer, alice, `${issuer}/files`);
    const before = watch.running();
    const refused = await fetch(`${issuer}/files`, {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(refused.status, 400);
    assert.deepEqual(watch.running(), before);
  });

  it('serve stopping ends every process', async () => {
    const running = watch.running();
    assert.ok(running.length > 0);
    await server.stop();
    await Promise.all(running.map((pid) => watch.ended(pid)));
    assert.deepEqual(watch.running(), []);
  });
});

describe('serve --gateway-idle-timeout', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  const watch = new Watch();
  let server: RunningServer;

  before(async () => {
    server = await serveWithStdio(data, await watch.listen(), ['--gateway-idle-timeout', '1']);
  });
  after(async () => {
    await server?.stop();
    watch.server.close();
  });

  it('ends a session and its process after the idle time; the session is then unknown', async () => {
    const client = await addClient(data, 'robot');
    const token = await tokenFor(server.issuer, client, `${server.issuer}/files`);
    const started = watch.next();
    const opened = await fetch(`${server.issuer}/files`, {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` },
      body: JSON.stringify(initialize(1)),
    });
    assert.equal(opened.status, 200);
    await opened.text();
    await watch.ended(await started);
    const gone = await fetch(`${server.issuer}/files`, {
      method: 'POST',
      headers: {
        ...MCP_HEADERS,
        authorization: `Bearer ${token}`,
        'mcp-session-id': opened.headers.get('mcp-session-id')!,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    assert.equal(gone.status, 404);
  });
});
