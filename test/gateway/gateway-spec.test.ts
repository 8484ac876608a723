import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseGatewaySpec } from '../../src/gateway/gateway-spec.js';

describe('parseGatewaySpec: --gateway PATH=URL', () => {
  it('takes a path and an http(s) URL', () => {
    assert.deepEqual(parseGatewaySpec('/github=http://127.0.0.1:3000/mcp'), {
      ok: true,
      value: { path: '/github', upstream: { kind: 'http', url: 'http://127.0.0.1:3000/mcp' } },
    });
    assert.deepEqual(parseGatewaySpec('/team/files=https://files.internal/mcp?x=1'), {
      ok: true,
      value: { path: '/team/files', upstream: { kind: 'http', url: 'https://files.internal/mcp?x=1' } },
    });
  });

  it('takes stdio:COMMAND ARGS, split at spaces without a shell', () => {
    assert.deepEqual(parseGatewaySpec('/files=stdio:npx -y  @modelcontextprotocol/server-filesystem /srv'), {
      ok: true,
      value: { path: '/files', upstream: { kind: 'stdio', command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/srv'] } },
    });
    assert.deepEqual(parseGatewaySpec('/files=stdio:a;rm -rf /'), {
      ok: true,
      value: { path: '/files', upstream: { kind: 'stdio', command: 'a;rm', args: ['-rf', '/'] } },
    });
  });

  it('refuses what it could not serve, saying why', () => {
    const refusals: [string, RegExp][] = [
      ['/github', /must be PATH=URL/],
      ['github=http://127.0.0.1:3000/mcp', /must be a path such as \/github/],
      ['/=http://127.0.0.1:3000/mcp', /must be a path/],
      ['/a/../b=http://127.0.0.1:3000/mcp', /must be a path/],
      ['/a b=http://127.0.0.1:3000/mcp', /must be a path/],
      ['/mcp=http://127.0.0.1:3000/mcp', /taken by this server's own mcp/],
      ['/token=http://127.0.0.1:3000/mcp', /taken/],
      ['/.well-known/x=http://127.0.0.1:3000/mcp', /taken/],
      ['/github=not a url', /is not a URL/],
      ['/github=file:///etc/passwd', /must be an http or https URL/],
      ['/github=http://user:secret@127.0.0.1:3000/mcp', /must not carry a user name or password/],
      ['/github=http://127.0.0.1:3000/mcp#x', /must not have a fragment/],
      ['/files=stdio:  ', /needs a command/],
    ];
    for (const [text, reason] of refusals) {
      const parsed = parseGatewaySpec(text);
      assert.equal(parsed.ok, false, text);
      if (!parsed.ok) assert.match(parsed.defect, reason, text);
    }
  });
});
