/**
 * A stdio server's stderr reaches the operator's log line by line, apart from the protocol: the
 * official MCP SDK's stdio server writes to stderr in the middle of a tool call, and the call's
 * answer comes back whole on stdout while the lines reach the `stderr` sink, each with its pid.
 */
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioUpstream } from '../../src/gateway/index.js';

const STDIO_SERVER = resolve(import.meta.dirname, '../helpers/stdio-server.ts');

describe('stdio upstream stderr', { timeout: 60_000 }, () => {
  it("sends each line of the child's stderr to the sink with the child's pid, never into the protocol", async () => {
    const lines: [string, number | null][] = [];
    let allArrived!: () => void;
    const arrived = new Promise<void>((resolveArrived) => (allArrived = resolveArrived));
    const upstream = new StdioUpstream({
      command: process.execPath,
      args: ['--import', 'tsx', STDIO_SERVER],
      maxSessions: 1,
      idleMs: 60_000,
      stderr: (line, pid) => {
        lines.push([line, pid]);
        if (lines.filter(([text]) => text === 'a line on stderr').length === 3) allArrived();
      },
    });
    const client = new Client({ name: 'stderr-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL('http://gateway.test/files'), {
      // The request as the gateway's route hands it over: its body read.
      fetch: async (url, init) => {
        const request = new Request(url, init);
        const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : new Uint8Array(await request.arrayBuffer());
        return (await upstream.forward({ method: request.method, url: request.url, headers: request.headers, body, whenGone: () => () => {} })).response;
      },
    });
    try {
      await client.connect(transport);
      const result = (await client.callTool({ name: 'write_stderr', arguments: { text: 'a line on stderr\n', times: 3 } })) as {
        content: { text: string }[];
      };
      assert.equal(result.content[0]!.text, 'written');
      await arrived;
      const pids = new Set(lines.filter(([text]) => text === 'a line on stderr').map(([, pid]) => pid));
      assert.equal(pids.size, 1);
      assert.equal(typeof [...pids][0], 'number');
    } finally {
      await client.close();
      await upstream.close();
    }
  });
});
