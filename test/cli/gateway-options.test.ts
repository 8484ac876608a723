import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { gatewayOptions, type ServeAddress } from '../../src/cli/gateway-options.js';
import { StdioUpstream } from '../../src/gateway/index.js';

const SCOPES = ['mcp:tools', 'mcp:admin'];
/** serve on its defaults: no --issuer, 127.0.0.1:8080. */
const HERE: ServeAddress = { issuer: undefined, host: '127.0.0.1', port: 8080 };
const refused = (values: Parameters<typeof gatewayOptions>[0], message: RegExp, env: NodeJS.ProcessEnv = {}, here: ServeAddress = HERE) =>
  assert.throws(
    () => gatewayOptions(values, SCOPES, here, env),
    (error: Error & { exitCode?: number }) => message.test(error.message),
  );

describe('serve --gateway flags', () => {
  it('makes a path per --gateway: HTTP ones with the audience of their signed tokens, stdio ones with the variables named', async () => {
    const settings = gatewayOptions(
      { gateway: ['/github=http://127.0.0.1:3000/mcp', '/files=stdio:node server.js'], 'gateway-token': 'signed', 'gateway-env': ['API_KEY'] },
      SCOPES,
      HERE,
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
    refused({ 'gateway-audit-arguments': true }, /--gateway-audit-arguments goes with --gateway/);
    refused({ gateway: ['/a=http://127.0.0.1:1/mcp', '/a=http://127.0.0.1:2/mcp'] }, /--gateway \/a is given twice/);
    refused({ gateway: ['/a=http://127.0.0.1:1/mcp'], 'gateway-timeout': '0' }, /--gateway-timeout must be a whole number from 1 to 600/);
    refused({ gateway: ['/a=http://127.0.0.1:1/mcp'], 'gateway-token': 'passthrough' }, /--gateway-token must be none or signed/);
    refused({ gateway: ['/a=stdio:x'], 'gateway-env': ['MISSING'] }, /--gateway-env MISSING is not set in serve's environment/);
    refused({ gateway: ['/mcp=http://127.0.0.1:1/mcp'] }, /--gateway \/mcp is taken/);
  });

  it('refuses an upstream that is this server itself, at one of its own paths, naming the flag', () => {
    const loop = /--gateway \/a=.* is this server itself: its requests would come back to it without end/;
    // The listen address, under any loopback name, at a route of the server or at a gateway path.
    refused({ gateway: ['/a=http://127.0.0.1:8080/mcp'] }, loop);
    refused({ gateway: ['/a=http://localhost:8080/token'] }, loop);
    refused({ gateway: ['/a=http://[::1]:8080/.well-known/oauth-authorization-server'] }, loop);
    refused({ gateway: ['/a=http://127.0.0.1:8080/a'] }, loop);
    refused({ gateway: ['/a=http://127.0.0.1:8080/b', '/b=http://127.0.0.1:3000/mcp'] }, loop);
    // A wildcard listen address is reached at a loopback name.
    refused({ gateway: ['/a=http://127.0.0.1:9000/a'] }, loop, {}, { issuer: undefined, host: '0.0.0.0', port: 9000 });
    // The issuer's origin (behind a proxy), its path included: what is under it is this server's.
    refused({ gateway: ['/a=https://auth.example.com/mcp'] }, loop, {}, { issuer: 'https://auth.example.com', host: '127.0.0.1', port: 8080 });
    refused(
      { gateway: ['/a=https://auth.example.com:443/tenant/token'] },
      loop,
      {},
      { issuer: 'https://auth.example.com/tenant', host: '127.0.0.1', port: 8080 },
    );

    // Another port, another host, or a path the server does not answer is another server.
    const served = (upstream: string, here: ServeAddress = HERE) => gatewayOptions({ gateway: [`/a=${upstream}`] }, SCOPES, here, {});
    for (const upstream of ['http://127.0.0.1:3000/mcp', 'http://10.0.0.5:8080/mcp', 'http://127.0.0.1:8080/upstream-server/mcp']) {
      assert.equal(served(upstream).gateways.length, 1, upstream);
    }
    assert.equal(served('https://tools.example.com/mcp', { issuer: 'https://auth.example.com', host: '127.0.0.1', port: 8080 }).gateways.length, 1);
    assert.equal(served('http://127.0.0.1:8080/mcp', { issuer: undefined, host: '127.0.0.1', port: 0 }).gateways.length, 1, 'port 0: not known before');
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
      HERE,
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
