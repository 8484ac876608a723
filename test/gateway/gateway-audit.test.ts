/**
 * The gateway's audit events, through the authorization server's audit log: one per tools/call,
 * with who, where, which tool and what came of it (the upstream's status, its failure, or the
 * gateway's refusal), and never a token; the arguments only with --gateway-audit-arguments.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sdkUpstream, type SdkUpstream } from '../helpers/mcp-upstreams.js';
import { MCP_HEADERS, gatewayHarness, initialize, nobodyListening, toolCall, type GatewayHarness } from '../helpers/gateway-harness.js';

const gatewayEvents = (h: GatewayHarness) => h.log.filter((record) => String(record.event).startsWith('gateway_tool_'));

/** A session at `path` for `token`: its headers. */
async function session(h: GatewayHarness, path: string, token: string): Promise<Record<string, string>> {
  const opened = await h.post(path, token, initialize(1));
  assert.equal(opened.status, 200);
  await opened.text();
  return { 'mcp-session-id': opened.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
}

describe('gateway audit events', () => {
  let upstream: SdkUpstream;
  let down: string;
  let policy: string;

  before(async () => {
    upstream = await sdkUpstream();
    down = await nobodyListening();
    policy = join(mkdtempSync(join(tmpdir(), 'ca-gateway-audit-')), 'policy.json');
    writeFileSync(policy, JSON.stringify({ '/policed': { tools: { echo: ['mcp:admin'] } } }));
  });
  after(() => upstream.close());

  it('one event per tools/call: forwarded with the upstream status, refused by the policy, failed upstream; no token, no arguments', async () => {
    const h = gatewayHarness({ gateway: [`/up=${upstream.url}`, `/policed=${upstream.url}`, `/down=${down}`], 'gateway-policy': policy });
    try {
      const robot = await h.client();
      const token = await h.token(robot, '/up');
      const headers = await session(h, '/up', token);
      const called = await h.post('/up', token, toolCall(2, 'echo', { text: 'a private argument' }), headers);
      assert.equal(called.status, 200);
      await called.text();
      // A batch: one event per call in it; other methods none.
      const batch = await h.post(
        '/up',
        token,
        [toolCall(3, 'echo', { text: 'first' }), { jsonrpc: '2.0', id: 4, method: 'tools/list' }, toolCall(5, 'x'.repeat(300), {})],
        headers,
      );
      await batch.text();
      const policedToken = await h.token(robot, '/policed');
      const refused = await h.post('/policed', policedToken, toolCall(1, 'echo', { text: 'an argument of a refused call' }));
      assert.equal(refused.status, 403);
      const downToken = await h.token(robot, '/down');
      assert.equal((await h.post('/down', downToken, toolCall(1, 'echo', { text: 'an argument never delivered' }))).status, 502);

      const who = { user_id: robot.client_id, client_id: robot.client_id };
      const events = gatewayEvents(h).map(({ time: _time, ...event }) => event);
      assert.deepEqual(events, [
        { event: 'gateway_tool_called', outcome: 'success', ...who, path: '/up', tool: 'echo', status: 200 },
        { event: 'gateway_tool_called', outcome: 'success', ...who, path: '/up', tool: 'echo', status: 200 },
        { event: 'gateway_tool_called', outcome: 'success', ...who, path: '/up', tool: `${'x'.repeat(200)}…`, status: 200 },
        {
          event: 'gateway_tool_refused',
          outcome: 'failure',
          ...who,
          path: '/policed',
          tool: 'echo',
          status: 403,
          reason: 'insufficient_scope',
          scope: 'mcp:admin',
        },
        { event: 'gateway_tool_failed', outcome: 'failure', ...who, path: '/down', tool: 'echo', status: 502, failure: 'unreachable' },
      ]);
      const logged = JSON.stringify(h.log);
      for (const secret of [
        token,
        policedToken,
        downToken,
        robot.client_secret!,
        'a private argument',
        'an argument of a refused call',
        'an argument never delivered',
      ]) {
        assert.equal(logged.includes(secret), false, `the log carries ${secret.slice(0, 12)}…`);
      }
    } finally {
      await h.settings.close();
    }
  });

  it('a tools/call whose method is spelled with JSON escapes is audited too', async () => {
    const h = gatewayHarness({ gateway: [`/up=${upstream.url}`] });
    try {
      const robot = await h.client();
      const token = await h.token(robot, '/up');
      const headers = await session(h, '/up', token);
      for (const method of ['tools\\/call', 'tools\\u002fcall', '\\u0074ools/c\\u0061ll']) {
        const body = `{"jsonrpc":"2.0","id":7,"method":"${method}","params":{"name":"echo","arguments":{"text":"x"}}}`;
        const called = await h.request('/up', { method: 'POST', headers: { ...MCP_HEADERS, ...headers, authorization: `Bearer ${token}` }, body });
        assert.equal(called.status, 200, method);
        assert.match(await called.text(), /"text":"x"/, `the upstream ran the call: ${method}`);
      }
      assert.deepEqual(
        gatewayEvents(h).map((event) => [event.event, event.tool]),
        [
          ['gateway_tool_called', 'echo'],
          ['gateway_tool_called', 'echo'],
          ['gateway_tool_called', 'echo'],
        ],
      );
    } finally {
      await h.settings.close();
    }
  });

  it('with --gateway-audit-arguments, each event carries the call’s arguments as JSON, cut to 2000 characters', async () => {
    const h = gatewayHarness({ gateway: [`/up=${upstream.url}`], 'gateway-audit-arguments': true });
    try {
      const robot = await h.client();
      const token = await h.token(robot, '/up');
      const headers = await session(h, '/up', token);
      await (await h.post('/up', token, toolCall(2, 'echo', { text: 'kept on purpose' }), headers)).text();
      await (await h.post('/up', token, toolCall(3, 'echo', { text: 'y'.repeat(3000) }), headers)).text();
      const [short, long] = gatewayEvents(h);
      assert.equal(short!.arguments, '{"text":"kept on purpose"}');
      assert.equal(long!.arguments, `${`{"text":"${'y'.repeat(3000)}"}`.slice(0, 2000)}…`);
      assert.equal(JSON.stringify(h.log).includes(token), false);
    } finally {
      await h.settings.close();
    }
  });
});
