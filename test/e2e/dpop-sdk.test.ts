/**
 * DPoP with the official SDK v2 client as the peer, against the real `context-auth serve`: a
 * machine client whose provider offers a `DpopSession` gets a DPoP-bound token (`token_type`
 * DPoP, `cnf.jkt` its key's thumbprint), calls the demo `whoami` through the SDK's transport (which
 * signs a proof per request), and the same token sent as a plain bearer is refused.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client, ClientCredentialsProvider, DpopSession, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { decodeJwt } from 'jose';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

/** The SDK's own provider for a client with a secret, with DPoP turned on the way the SDK documents. */
class DpopClientCredentialsProvider extends ClientCredentialsProvider {
  readonly session: Promise<DpopSession>;
  constructor(options: ConstructorParameters<typeof ClientCredentialsProvider>[0]) {
    super(options);
    this.session = DpopSession.create();
  }
  dpop(): Promise<DpopSession> {
    return this.session;
  }
}

async function initialize(url: string, authorization: string, extra: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...extra },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
}

for (const nonce of [false, true]) {
  describe(`the SDK v2 client with DPoP against serve${nonce ? ' --dpop-nonce' : ''}`, { timeout: 300_000 }, () => {
    const data = tempDataFolder();
    let server: RunningServer;

    before(async () => {
      server = await startServe(['--port', String(await freePort()), '--data', data, '--quiet', ...(nonce ? ['--dpop-nonce'] : [])]);
    });
    after(async () => {
      await server?.stop();
    });

    it('gets a DPoP-bound token, calls whoami with proofs, and the token alone is refused as a bearer', async () => {
      const added = await cli(['clients', 'add', '--data', data, '--grant-type', 'client_credentials', '--name', 'dpop robot']);
      assert.equal(added.code, 0, added.stderr);
      const { client_id: clientId, client_secret: clientSecret } = JSON.parse(added.stdout) as { client_id: string; client_secret: string };
      const provider = new DpopClientCredentialsProvider({ clientId, clientSecret, expectedIssuer: server.issuer });

      const client = new Client({ name: 'dpop-e2e', version: '1.0.0' });
      const mcp = `${server.issuer}/mcp`;
      await client.connect(new StreamableHTTPClientTransport(new URL(mcp), { authProvider: provider }));
      try {
        const result = (await client.callTool({ name: 'whoami', arguments: {} })) as { structuredContent?: Record<string, unknown> };
        assert.equal(result.structuredContent?.client_id, clientId);
      } finally {
        await client.close().catch(() => {});
      }

      const tokens = await provider.tokens();
      assert.ok(tokens, 'the provider kept its tokens');
      assert.equal(tokens.token_type.toLowerCase(), 'dpop');
      const session = await provider.session;
      assert.deepEqual(decodeJwt(tokens.access_token).cnf, { jkt: session.thumbprint });

      const asBearer = await initialize(mcp, `Bearer ${tokens.access_token}`);
      assert.equal(asBearer.status, 401, 'a bound token without its proof is refused');
      assert.match(asBearer.headers.get('www-authenticate') ?? '', /DPoP/);

      const proof = await session.buildProof({ htm: 'POST', htu: mcp, accessToken: tokens.access_token });
      const withProof = await initialize(mcp, `DPoP ${tokens.access_token}`, { dpop: proof });
      if (!nonce) assert.equal(withProof.status, 200, await withProof.text());
      const replayed = await initialize(mcp, `DPoP ${tokens.access_token}`, { dpop: proof });
      assert.equal(replayed.status, 401, 'a proof is good once');
    });
  });
}
