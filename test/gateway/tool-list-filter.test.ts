import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { filterToolList, toolListRequestIds } from '../../src/gateway/tool-list-filter.js';

const list = (id: number) => ({ jsonrpc: '2.0', id, result: { tools: [{ name: 'echo' }, { name: 'delete' }] } });
const keep = (name: string) => name !== 'delete';

describe('tools/list answers filtered', () => {
  it('in a JSON answer, only the answer to the tools/list request', async () => {
    const ids = toolListRequestIds([
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { jsonrpc: '2.0', id: 2, method: 'ping' },
    ]);
    const answer = new Response(JSON.stringify([list(1), list(2)]), { headers: { 'content-type': 'application/json' } });
    const filtered = (await filterToolList(answer, ids, keep).json()) as { result: { tools: { name: string }[] } }[];
    assert.deepEqual(filtered[0]!.result.tools, [{ name: 'echo' }]);
    assert.deepEqual(filtered[1]!.result.tools, [{ name: 'echo' }, { name: 'delete' }], 'not the answer to tools/list');
  });

  it('in an event stream, event by event as they come, whatever the chunks', async () => {
    const ids = toolListRequestIds({ jsonrpc: '2.0', id: 7, method: 'tools/list' });
    const events = `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\nevent: message\nid: 3\ndata: ${JSON.stringify(list(7))}\n\n`;
    const bytes = new TextEncoder().encode(events);
    const source = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < bytes.length; at += 7) controller.enqueue(bytes.slice(at, at + 7));
        controller.close();
      },
    });
    const text = await filterToolList(new Response(source, { headers: { 'content-type': 'text/event-stream' } }), ids, keep).text();
    assert.equal(
      text,
      `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\nevent: message\nid: 3\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: 7, result: { tools: [{ name: 'echo' }] } })}\n\n`,
    );
  });
});
