/**
 * tools/list answers with the tools a token may not call taken out, for a path whose policy asks
 * for it. The answer is a JSON body or an event stream; in a stream only the event carrying the
 * answer to the tools/list request is rewritten, and every other event passes as it comes.
 */

type Keep = (toolName: string) => boolean;

/** The ids of the tools/list requests in a JSON-RPC message or batch. */
export function toolListRequestIds(body: unknown): Set<unknown> {
  const ids = new Set<unknown>();
  for (const message of Array.isArray(body) ? body : [body]) {
    if (typeof message === 'object' && message !== null && (message as { method?: unknown }).method === 'tools/list') ids.add((message as { id?: unknown }).id);
  }
  return ids;
}

export function filterToolList(response: Response, ids: Set<unknown>, keep: Keep): Response {
  if (ids.size === 0 || response.body === null) return response;
  const type = response.headers.get('content-type') ?? '';
  const init = { status: response.status, headers: response.headers };
  if (type.startsWith('application/json')) {
    const filtered = response.text().then((text) => {
      try {
        return JSON.stringify(filterMessages(JSON.parse(text), ids, keep));
      } catch {
        return text;
      }
    });
    return new Response(streamOf(filtered), init);
  }
  if (type.startsWith('text/event-stream')) return new Response(response.body.pipeThrough(eventFilter(ids, keep)), init);
  return response;
}

function filterMessages(body: unknown, ids: Set<unknown>, keep: Keep): unknown {
  if (Array.isArray(body)) return body.map((message) => filterMessages(message, ids, keep));
  if (typeof body !== 'object' || body === null) return body;
  const message = body as { id?: unknown; result?: { tools?: unknown } };
  if (!ids.has(message.id) || !Array.isArray(message.result?.tools)) return body;
  const tools = message.result.tools.filter((tool: unknown) => typeof (tool as { name?: unknown })?.name === 'string' && keep((tool as { name: string }).name));
  return { ...message, result: { ...message.result, tools } };
}

/** An event stream, event by event (events end with a blank line), the tools/list answer filtered. */
function eventFilter(ids: Set<unknown>, keep: Keep): TransformStream<Uint8Array, Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let pending = '';
  const rewrite = (event: string): string =>
    event
      .split('\n')
      .map((line) => {
        if (!line.startsWith('data:')) return line;
        try {
          return `data: ${JSON.stringify(filterMessages(JSON.parse(line.slice(5)), ids, keep))}`;
        } catch {
          return line;
        }
      })
      .join('\n');
  return new TransformStream({
    transform(chunk, controller) {
      pending += decoder.decode(chunk, { stream: true }).replace(/\r\n/g, '\n');
      let end: number;
      while ((end = pending.indexOf('\n\n')) >= 0) {
        controller.enqueue(encoder.encode(`${rewrite(pending.slice(0, end))}\n\n`));
        pending = pending.slice(end + 2);
      }
    },
    flush(controller) {
      if (pending !== '') controller.enqueue(encoder.encode(rewrite(pending)));
    },
  });
}

function streamOf(text: Promise<string>): ReadableStream<Uint8Array> {
  return new ReadableStream({
    async start(controller) {
      controller.enqueue(new TextEncoder().encode(await text));
      controller.close();
    },
  });
}
