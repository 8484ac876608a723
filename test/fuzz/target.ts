/**
 * What the fuzz run attacks: the app `serve` runs (src/cli/serve.ts) — the authorization server
 * and the demo MCP server at /mcp, its verifier reaching the JWKS in-process, revocations
 * followed — on serve's own Node listener on loopback (its timeouts and connection limits; the
 * requests read from Node's request), on a real store. Two
 * settings differ from serve's defaults, both ones an operator can choose:
 * - the rate limits are raised (a million at once): still checked on every request (on
 *   PostgreSQL in the store), but a 429 would hide the endpoint behind it;
 * - `--trust-proxy 127.0.0.1`: requests may name their client address in X-Forwarded-For, so the
 *   header's parser is fuzzed too, and the sign-in back-off, which counts failures per address,
 *   does not hold every later sign-in behind the fuzz's own failures.
 * Client ID metadata documents are accepted from http://127.0.0.1 (the switch tests use), where
 * a second server answers documents, most of them garbage (documents.ts). Sign-in through an
 * upstream provider is offered too (a real OpenID provider on loopback, helpers/oidc-provider.ts),
 * so the provider buttons, the upstream consent and /upstream/callback are reached.
 */
import { createAuthorizationServer } from '../../src/authorization-server/index.js';
import { createListener } from '../../src/authorization-server/node-server/listener.js';
import { SecretBox, generateSecretKey, parseSecretKeys } from '../../src/core/secret-box.js';
import { coHostedApp } from '../../src/cli/co-hosted-app.js';
import type { FullStore } from '../../src/store/store.js';
import { startOidcProvider } from '../helpers/oidc-provider.js';

const RAISED = { burst: 1_000_000, perMinute: 1_000_000 };

export interface FuzzTarget {
  port: number;
  issuer: string;
  resource: string;
  /** The upstream provider's issuer (what a callback's `iss` names). */
  upstreamIssuer: string;
  /** Whether the listening server is still there. */
  listening(): boolean;
  stop(): Promise<void>;
}

/** `onInternalError`: called with each event the server logs that means a bug (`internal_error`, a 500's cause, and the like). */
export async function startTarget(store: FullStore, onInternalError: (event: Record<string, unknown>) => void): Promise<FuzzTarget> {
  // serve's own listener with its defaults (--header-timeout 10, --max-connections 1000): the
  // requests are read from Node's request, as under serve (http/from-node.ts).
  const listener = createListener({ host: '127.0.0.1', port: 0 }, ['127.0.0.1']);
  await listener.listen();
  const server = listener.server;
  const port = Number(new URL(listener.url).port);
  const issuer = `http://127.0.0.1:${port}`;
  const resource = `${issuer}/mcp`;
  const idp = await startOidcProvider({ redirectUris: [`${issuer}/upstream/callback`] });
  const authorizationServer = createAuthorizationServer({
    issuer,
    store,
    resources: [resource],
    log: (event) => {
      if (event.event === 'internal_error' || event.event === 'store_unavailable' || event.event === 'sweep_failed') onInternalError(event);
    },
    clientIdMetadataDocuments: { enabled: true, allowHosts: [], allowLoopbackHttp: true },
    clientAddress: listener.clientAddress,
    trustProxy: ['127.0.0.1'],
    rateLimits: { register: RAISED, token: RAISED, signIn: RAISED, clientDocument: RAISED, clientDocumentTotal: RAISED },
    upstream: {
      providers: [{ kind: 'oidc', id: 'corp', name: 'Corp SSO', issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret }],
      secretBox: new SecretBox(parseSecretKeys(generateSecretKey(), 'fuzz')),
      allowLoopbackHttp: true,
    },
  });
  await authorizationServer.keys.publicJwks();
  await authorizationServer.upstreamReady();
  await authorizationServer.revocations.start();

  const app = coHostedApp(authorizationServer, {
    resource,
    demo: {
      upstream: (auth) => authorizationServer.upstreamAccess(auth.claims),
      user: async (subject) => {
        const user = await store.getUser({ id: subject });
        return user ? { username: user.username, name: null } : null;
      },
    },
  });
  listener.serve(app);

  return {
    port,
    issuer,
    resource,
    upstreamIssuer: idp.issuer,
    listening: () => server.listening,
    stop: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await authorizationServer.revocations.stop();
      await idp.stop();
    },
  };
}
