/**
 * The authorization server in a program of your own: context-auth starts it, and stops it in
 * order when the scope that holds it ends (`await using`).
 *
 *   node --import tsx examples/authorization-server.ts   # on http://127.0.0.1:8080
 *   npx context-auth users add alice --data .            # someone to sign in as (the same file)
 *   node --import tsx examples/hono-server.ts            # the context server its tokens are for
 *
 * Settings (environment): PORT (8080; 0 picks a free one), DATABASE (./context-auth.db),
 * RESOURCE_URL (http://127.0.0.1:3000/mcp, the Hono example's URL).
 */
// #region start
import { once } from 'node:events';
import { startAuthorizationServer } from 'context-auth/authorization-server';
import { openSqliteStore } from 'context-auth/store/sqlite';

await using server = await startAuthorizationServer({
  store: openSqliteStore({ path: process.env.DATABASE ?? 'context-auth.db' }), // the server closes it when it stops
  resources: [process.env.RESOURCE_URL ?? 'http://127.0.0.1:3000/mcp'],
  listen: { port: Number(process.env.PORT ?? 8080) }, // on 127.0.0.1; the issuer is the URL it listens at
});
console.error(`Authorization server at ${server.url}`);

// Until Ctrl-C or a service manager's SIGTERM. Leaving the scope then stops the server: no new
// connections, the requests in flight answered, then the store closed.
await Promise.race([once(process, 'SIGINT'), once(process, 'SIGTERM')]);
// #endregion start
