/**
 * A real upstream identity provider for the tests: node-oidc-provider (OpenID Certified), on a
 * loopback port, with one confidential client registered for our callback. The person's sign-in
 * is finished programmatically through its interaction API (`decide` says who signs in, or that
 * they decline). It also serves a GitHub-style `/api/user` (user-info of a plain OAuth 2.0
 * provider, authenticated with the provider's own access tokens), so one provider plays both kinds.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

export interface UpstreamAccount {
  id: string;
  email: string;
  /** What the provider asserts as `email_verified`; default true. */
  emailVerified?: boolean;
  /** Absent: the provider asserts no name. */
  name?: string;
  username: string;
  /** GitHub-style numeric id, for /api/user. */
  numericId: number;
  /** GitHub-style addresses, for /api/user/emails; default: `email`, primary and verified. */
  emails?: Array<{ email: string; primary: boolean; verified: boolean }>;
}

export type Decision = { account: string } | { deny: true };

export type FreshLoginHandling = 'honour' | 'ignore' | 'ignore-but-tell';

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  accounts: Map<string, UpstreamAccount>;
  /** Who signs in at the next interaction; default: the first account. */
  decide: (decision: Decision) => void;
  /** Lifetime of the access tokens it issues from now on, in seconds. */
  setAccessTokenTtl: (seconds: number) => void;
  /**
   * From now on, how it treats a request for a fresh login (`prompt=login`, `max_age`): `honour`
   * (the default) as OpenID says; `ignore` signs the person in from the session it has and says
   * nothing of when (no `auth_time`); `ignore-but-tell` does the same and still says when that
   * login was (`auth_time`).
   */
  setFreshLoginHandling: (handling: FreshLoginHandling) => void;
  /** RFC 7009 revocation with the client's own credentials (what an admin's "sign out everywhere" does). */
  revoke: (token: string) => Promise<void>;
  /** Stops answering (connections refused) until `start` again on the same port. */
  stop: () => Promise<void>;
  start: () => Promise<void>;
}

/**
 * `pages: true` shows the person a sign-in page at the provider (a button per account) instead of
 * finishing the interaction at once, for a real browser to click through.
 */
/**
 * `apiAudience` makes its access tokens be for that API (an RFC 8707 resource, as Entra's are for
 * an app's own API), which its user-info then refuses.
 */
/**
 * `deviceFlow` turns on the device authorization grant (RFC 8628, with the provider's own /device
 * pages) and open dynamic client registration, for a client that registers itself for it. `dpop`
 * turns on DPoP (RFC 9449) with a nonce required at every token request.
 */
export async function startOidcProvider(options: {
  redirectUris: string[];
  accounts?: UpstreamAccount[];
  pages?: boolean;
  apiAudience?: string;
  deviceFlow?: boolean;
  dpop?: boolean;
}): Promise<TestOidcProvider> {
  const accounts = new Map(
    (options.accounts ?? [{ id: 'alice-sub', email: 'alice@example.com', name: 'Alice Example', username: 'alice', numericId: 1001 }]).map((a) => [a.id, a]),
  );
  let decision: Decision = { account: [...accounts.keys()][0]! };
  let accessTokenTtl = 3600;
  let freshLogin: FreshLoginHandling = 'honour';
  const clientId = 'context-auth-upstream';
  const clientSecret = 'a-secret-the-operator-copied-from-the-provider-console';

  // Bind first, so the issuer (which names the port) is known before the provider is made.
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}`;

  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: options.redirectUris,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [{ ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig', kid: 'test-key' }] },
    cookies: { keys: ['test cookie key, not a secret'] },
    scopes: ['openid', 'offline_access', 'email', 'profile', 'read:user'],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'preferred_username'] },
    features: {
      devInteractions: { enabled: false },
      revocation: { enabled: true },
      ...(options.deviceFlow ? { deviceFlow: { enabled: true }, registration: { enabled: true } } : {}),
      ...(options.dpop ? { dPoP: { enabled: true, nonceSecret: randomBytes(32), requireNonce: () => true } } : {}),
      ...(options.apiAudience
        ? {
            resourceIndicators: {
              enabled: true,
              defaultResource: () => options.apiAudience!,
              useGrantedResource: () => true,
              getResourceServerInfo: () => ({ scope: 'api', audience: options.apiAudience!, accessTokenFormat: 'opaque' as const }),
            },
          }
        : {}),
    },
    // Refresh tokens whenever the client may use them, rotated at every use.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    ttl: { AccessToken: () => accessTokenTtl },
    findAccount: async (_ctx, id) => {
      const account = accounts.get(id);
      if (!account) return undefined;
      return {
        accountId: id,
        claims: async () => ({
          sub: id,
          email: account.email,
          email_verified: account.emailVerified ?? true,
          ...(account.name ? { name: account.name } : {}),
          preferred_username: account.username,
        }),
      };
    },
  });
  const callback = provider.callback();

  const handler = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', issuer).pathname;
    if (path === '/auth' && freshLogin !== 'honour') req.url = withoutFreshLogin(req.url!);
    if (path.startsWith('/interaction/')) return interact(req, res);
    if (path === '/api/user') return githubUser(req, res);
    if (path === '/api/user/emails') return githubEmails(req, res);
    callback(req, res);
  };

  /**
   * An authorization request as a provider that ignores requests for a fresh login sees it: no
   * `prompt=login`, no `max_age=0`. One that still tells when the login was gets a `max_age` no
   * session here is older than, which makes oidc-provider put `auth_time` in the ID token.
   */
  const withoutFreshLogin = (url: string): string => {
    const parsed = new URL(url, issuer);
    parsed.searchParams.delete('prompt');
    parsed.searchParams.delete('max_age');
    if (freshLogin === 'ignore-but-tell') parsed.searchParams.set('max_age', String(365 * 24 * 3600));
    return `${parsed.pathname}${parsed.search}`;
  };

  /** The person at the provider's pages: signs in as `decision` says, then consents to what was asked. */
  const interact = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const details = await provider.interactionDetails(req, res);
    if (options.pages && details.prompt.name === 'login') {
      if (req.method === 'GET') {
        const buttons = [...accounts.values()].map((a) => `<button name="account" value="${a.id}">Continue as ${a.name ?? a.username}</button>`).join('');
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(`<!doctype html><title>Test identity provider</title><h1>Test identity provider</h1><form method="post">${buttons}</form>`);
        return;
      }
      let body = '';
      for await (const chunk of req) body += String(chunk);
      decision = { account: new URLSearchParams(body).get('account') ?? '' };
    }
    if ('deny' in decision) {
      await provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'the person declined' }, { mergeWithLastSubmission: false });
      return;
    }
    if (details.prompt.name === 'login') {
      await provider.interactionFinished(req, res, { login: { accountId: decision.account } }, { mergeWithLastSubmission: false });
      return;
    }
    const grant = details.grantId
      ? (await provider.Grant.find(details.grantId))!
      : new provider.Grant({ accountId: details.session!.accountId, clientId: details.params.client_id as string });
    const missing = details.prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope((missing.missingOIDCScope as string[]).join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims as string[]);
    if (details.params.scope) grant.addOIDCScope(details.params.scope as string);
    if (options.apiAudience) grant.addResourceScope(options.apiAudience, 'api');
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  };

  /** The account behind a valid access token, or null after answering 401 as GitHub does. */
  const githubAccount = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<UpstreamAccount | null> => {
    const token = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const found = token ? await provider.AccessToken.find(token) : undefined;
    const account = found && !found.isExpired ? accounts.get(found.accountId!) : undefined;
    if (account) return account;
    res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer error="invalid_token"' });
    res.end(JSON.stringify({ message: 'Bad credentials' }));
    return null;
  };

  /** GitHub's GET /user: the public profile (its email is whatever the person made public). */
  const githubUser = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const account = await githubAccount(req, res);
    if (!account) return;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: account.numericId, login: account.username, name: account.name, email: account.email }));
  };

  /** GitHub's GET /user/emails: every address, with which is primary and which verified. */
  const githubEmails = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const account = await githubAccount(req, res);
    if (!account) return;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(account.emails ?? [{ email: account.email, primary: true, verified: true }]));
  };

  server.on('request', (req, res) => {
    handler(req, res).catch((error: unknown) => {
      res.writeHead(500).end(String(error));
    });
  });

  const sockets = new Set<import('node:net').Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  return {
    issuer,
    clientId,
    clientSecret,
    accounts,
    decide: (next) => {
      decision = next;
    },
    setAccessTokenTtl: (seconds) => {
      accessTokenTtl = seconds;
    },
    setFreshLoginHandling: (handling) => {
      freshLogin = handling;
    },
    revoke: async (token) => {
      const response = await fetch(`${issuer}/token/revocation`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ token }),
      });
      if (!response.ok) throw new Error(`revocation failed: ${response.status} ${await response.text()}`);
    },
    stop: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    start: () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve)),
  };
}
