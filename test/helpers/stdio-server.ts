/**
 * A stdio context server made with the official MCP SDK, for the gateway's tests. At start, given
 * $WATCH_PORT, it connects to the test at 127.0.0.1:$WATCH_PORT and says its pid: the test sees it
 * start, and sees the connection close when the process ends. `wait_for_release` reports
 * progress, then waits for the test to send "release" over that connection. `write_stderr`
 * writes what it is given to stderr, as a chatty server does, then answers on stdout.
 */
import { connect } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const releases: (() => void)[] = [];
if (process.env.WATCH_PORT !== undefined) {
  const watch = connect(Number(process.env.WATCH_PORT), '127.0.0.1');
  watch.write(`pid ${process.pid}\n`);
  watch.on('data', (chunk) => {
    for (const line of chunk.toString().split('\n')) if (line === 'release') releases.shift()?.();
  });
}

const server = new McpServer({ name: 'gateway-stdio-upstream', version: '1.0.0' });
server.registerTool('echo', { description: 'Says back what it is given.', inputSchema: { text: z.string() } }, ({ text }) => ({
  content: [{ type: 'text', text }],
}));
server.registerTool('process', { description: 'This process: its pid and what its environment holds.' }, () => {
  const facts = {
    pid: process.pid,
    operator_value: process.env.OPERATOR_VALUE ?? null,
    context_auth_variables: Object.keys(process.env).filter((name) => name.startsWith('CONTEXT_AUTH')),
  };
  return { content: [{ type: 'text', text: JSON.stringify(facts) }] };
});
server.registerTool('wait_for_release', { description: 'Reports progress, then waits for the test.' }, async (extra) => {
  const progressToken = extra._meta?.progressToken;
  if (progressToken !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: 1, total: 2 } });
  await new Promise<void>((resolve) => releases.push(resolve));
  return { content: [{ type: 'text', text: 'released' }] };
});
server.registerTool(
  'write_stderr',
  { description: 'Writes `text` to stderr `times` times, then answers.', inputSchema: { text: z.string(), times: z.number().int().min(1) } },
  async ({ text, times }) => {
    await new Promise<void>((resolve) => process.stderr.write(text.repeat(times), () => resolve()));
    return { content: [{ type: 'text', text: 'written' }] };
  },
);
await server.connect(new StdioServerTransport());
