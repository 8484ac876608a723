/**
 * `serve` runs with a heap sized for a server (src/cli/serve-thread.ts), however it is started,
 * and leaves the heap alone when the operator sized it with node's own flags. The banner line
 * shows V8's own limit, read inside the server.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SERVE_OLD_GENERATION_MB, SERVE_YOUNG_GENERATION_MB } from '../../src/cli/serve-thread.js';
import { freePort, startServe, tempDataFolder } from './serve-process.js';

const heapLine = (output: string): string => /heap limit\s+(.*)/.exec(output)?.[1] ?? '';

async function serveWith(nodeOptions: string | undefined): Promise<{ line: string; exitCode: number | null; output: string; signal: string | null }> {
  const saved = process.env.NODE_OPTIONS;
  if (nodeOptions === undefined) delete process.env.NODE_OPTIONS;
  else process.env.NODE_OPTIONS = nodeOptions;
  try {
    const server = await startServe(['--port', String(await freePort()), '--data', tempDataFolder(), '--quiet']);
    const line = heapLine(server.output());
    const exitCode = await server.stop('SIGTERM');
    return { line, exitCode, output: server.output(), signal: server.process.signalCode };
  } finally {
    if (saved === undefined) delete process.env.NODE_OPTIONS;
    else process.env.NODE_OPTIONS = saved;
  }
}

describe('serve: heap', { timeout: 300_000 }, () => {
  it('limits its old and young generations itself, and still stops cleanly on SIGTERM', async () => {
    const { line, exitCode } = await serveWith(undefined);
    assert.equal(line, `${SERVE_OLD_GENERATION_MB + SERVE_YOUNG_GENERATION_MB} MB`);
    assert.equal(exitCode, 0);
  });

  it("keeps the operator's --max-old-space-size", async () => {
    const { line, exitCode, output, signal } = await serveWith('--max-old-space-size=300');
    assert.match(line, /^3\d\d MB \(as node was started\)$/);
    assert.equal(exitCode, 0, `${signal} ${output}`);
  });
});
