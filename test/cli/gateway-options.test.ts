import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { gatewayOptions } from '../../src/cli/gateway-options.js';
import { StdioUpstream } from '../../src/gateway/index.js';

const SCOPES = ['mcp:tools', 'mcp:admin'];
const refused = (values: Parameters<typeof gatewayOptions>[0], message: RegExp, env: NodeJS.ProcessEnv = {}) =>
  assert.throws(
    () => gatewayOptions(values, SCOPES, env),
    (error: Error & { exitCode?: number }) => message.test(error.message),
  );

describe('serve --gateway flags', () => {
  it('makes a path per --gateway: HTTP ones with the audience of their signed tokens, stdio ones with the variables named', async () => {
    const settings = gatewayOptions(
      { gateway: ['/github=http://127.0.0.1:3000/mcp', '/files=stdio:node server.js'], 'gateway-token': 'signed', 'gateway-env': ['API_KEY'] },
      SCOPES,
      { API_KEY: 'k', OTHER: 'x' },
    );
    assert.deepEqual(
      settings.gateways.map((gateway) => [gateway.path, gateway.upstreamTokenAudience]),
      [
        ['/github', 'http://127.0.0.1:3000/mcp'],
        ['/files', undefined],
      ],
    );
    assert.ok(settings.gateways[1]!.upstream instanceof StdioUpstream);
    await settings.close();
  });

  it('refuses what cannot work, naming the flag', () => {
    refused({ 'gateway-timeout': '5' }, /--gateway-timeout goes with --gateway/);
    refused({ 'gateway-policy': 'p.json' }, /--gateway-policy goes with --gateway/);
    refused({ gateway: ['/a=http://127.0.0.1:1/mcp', '/a=http://127.0.0.1:2/mcp'] }, /--gateway \/a is given twice/);
    refused({ gateway: ['/a=http://127.0.0.1:1/mcp'], 'gateway-timeout': '0' }, /--gateway-timeout must be a whole number from 1 to 600/);
    refused({ gateway: ['/a=http://127.0.0.1:1/mcp'], 'gateway-token': 'passthrough' }, /--gateway-token must be none or signed/);
    refused({ gateway: ['/a=stdio:x'], 'gateway-env': ['MISSING'] }, /--gateway-env MISSING is not set in serve's environment/);
    refused({ gateway: ['/mcp=http://127.0.0.1:1/mcp'] }, /--gateway \/mcp is taken/);
  });

  it('reads --gateway-policy, refusing a file it could not apply', () => {
    const folder = mkdtempSync(join(tmpdir(), 'ca-gateway-policy-'));
    const file = (name: string, text: string) => {
      writeFileSync(join(folder, name), text);
      return join(folder, name);
    };
    const good = gatewayOptions(
      { gateway: ['/a=http://127.0.0.1:1/mcp'], 'gateway-policy': file('good.json', '{"/a":{"tools":{"x":["mcp:admin"]}}}') },
      SCOPES,
      {},
    );
    assert.deepEqual([...good.gateways[0]!.policy!.tools], [['x', ['mcp:admin']]]);
    refused({ gateway: ['/a=http://127.0.0.1:1/mcp'], 'gateway-policy': file('bad.json', '{') }, /bad\.json is not JSON/);
    refused({ gateway: ['/a=http://127.0.0.1:1/mcp'], 'gateway-policy': join(folder, 'missing.json') }, /missing\.json cannot be read \(ENOENT\)/);
    refused(
      { gateway: ['/a=http://127.0.0.1:1/mcp'], 'gateway-policy': file('scope.json', '{"/a":{"tools":{"x":["repo:write"]}}}') },
      /names the scope repo:write, which this server does not issue/,
    );
  });
});
