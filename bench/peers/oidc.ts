/**
 * Peer 2: node-oidc-provider (OpenID Certified) with its default in-memory adapter, resource
 * indicators on and JWT access tokens (RS256, a 2048-bit key) for our resource, refresh tokens
 * rotated at every use. No `openid` scope is granted, so a refresh issues an access token and a
 * refresh token and no ID token, as our server and the SDK do. The grant and its refresh tokens
 * are made through the provider's own models before it listens. With BENCH_MACHINE_JWK the
 * client_credentials grant is enabled too, with two more clients: one with a secret
 * (client_secret_basic), one with the load generator's key (private_key_jwt, ES256); its access
 * tokens are the same JWTs for the same resource.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider, { type ClientMetadata } from 'oidc-provider';
import { announce, chains, flowsWanted, machineJwk, type FlowSetup, type MachineSetup } from './child.js';

const RESOURCE = 'http://127.0.0.1/mcp';
const clientId = 'bench-client';
const accountId = 'bench-user';
const REDIRECT_URI = 'http://127.0.0.1:9/cb';

const server = http.createServer();
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const port = (server.address() as AddressInfo).port;
const issuer = `http://127.0.0.1:${port}`;

const jwk = machineJwk();
const machine: MachineSetup | undefined = jwk && {
  audience: issuer,
  resource: RESOURCE,
  scope: 'mcp:tools',
  secretClient: { clientId: 'bench-secret-client', secret: randomBytes(32).toString('base64url') },
  keyClientId: 'bench-key-client',
};
const machineClients: ClientMetadata[] = machine
  ? (
      [
        { client_id: machine.secretClient.clientId, client_secret: machine.secretClient.secret, token_endpoint_auth_method: 'client_secret_basic' },
        { client_id: machine.keyClientId, token_endpoint_auth_method: 'private_key_jwt', token_endpoint_auth_signing_alg: 'ES256', jwks: { keys: [jwk!] } },
      ] satisfies ClientMetadata[]
    ).map((client) => ({ ...client, grant_types: ['client_credentials'], response_types: [], redirect_uris: [], scope: 'mcp:tools' }))
  : [];

const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const provider = new Provider(issuer, {
  clients: [
    {
      client_id: clientId,
      token_endpoint_auth_method: 'none',
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    },
    ...machineClients,
  ],
  jwks: { keys: [{ ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig', kid: 'bench-key' }] },
  cookies: { keys: ['bench cookie key, not a secret'] },
  scopes: ['offline_access', 'mcp:tools'],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: Boolean(machine) },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => RESOURCE,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({ scope: 'mcp:tools', audience: RESOURCE, accessTokenFormat: 'jwt', accessTokenTTL: 3600 }),
    },
  },
  rotateRefreshToken: true,
  // The default issues a refresh token from a code only with `offline_access` (an OpenID Connect
  // scope); ours and the SDK issue one to every client allowed the grant, so this does too.
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  ttl: { Grant: 14 * 24 * 3600, RefreshToken: 14 * 24 * 3600, AccessToken: 3600, AuthorizationCode: 60, Session: 14 * 24 * 3600, Interaction: 3600 },
  findAccount: async (_ctx, id) => (id === accountId ? { accountId: id, claims: async () => ({ sub: id }) } : undefined),
});
// Silence the per-request "server_error" logging paths; errors still fail the bench (non-200).
provider.on('server_error', (_ctx, error) => console.error(error));

const client = await provider.Client.find(clientId);
if (!client) throw new Error('client not registered');
const refreshTokens: string[] = [];
for (let chain = 0; chain < chains(); chain++) {
  const grant = new provider.Grant({ accountId, clientId });
  grant.addResourceScope(RESOURCE, 'mcp:tools');
  const grantId = await grant.save();
  const refreshToken = new provider.RefreshToken({ client, accountId, grantId, scope: 'mcp:tools', resource: RESOURCE, gty: 'authorization_code' });
  refreshTokens.push(await refreshToken.save());
}

const callback = provider.callback();
server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
  if (req.url?.startsWith('/interaction/')) void finishInteraction(req, res);
  else callback(req, res);
});

/**
 * The interaction a person would complete once (used only while preparing the flows bench):
 * signed in as the bench account, consent recorded in a Grant for our resource's scope. The
 * provider remembers the grant in the session, and its default `loadExistingGrant` finds it there
 * on the next /auth, so later authorization requests need no page.
 */
async function finishInteraction(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  try {
    // As the provider's documented interaction example does: login first, then consent to what is missing.
    const details = await provider.interactionDetails(req, res);
    if (details.prompt.name === 'login') {
      await provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
      return;
    }
    const grant = details.grantId ? await provider.Grant.find(details.grantId) : new provider.Grant({ accountId, clientId });
    if (!grant) throw new Error('grant gone');
    const missing = details.prompt.details as { missingOIDCScope?: string[]; missingResourceScopes?: Record<string, string[]> };
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) grant.addResourceScope(indicator, scopes.join(' '));
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  } catch (error) {
    console.error(error);
    res.statusCode = 500;
    res.end();
  }
}

/** Drives /auth → interaction → /auth/:uid once like a browser; returns the session cookies it is left with. */
async function signedInBrowser(): Promise<string> {
  const jar = new Map<string, string>();
  const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    scope: 'mcp:tools',
    resource: RESOURCE,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 's',
  });
  let url = `${issuer}/auth?${query}`;
  for (let hop = 0; hop < 6; hop++) {
    const response = await fetch(url, { redirect: 'manual', headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } });
    for (const line of response.headers.getSetCookie()) {
      const pair = line.split(';')[0]!;
      const eq = pair.indexOf('=');
      jar.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    const location = response.headers.get('location');
    if (!location) throw new Error(`oidc-provider setup: ${response.status} ${(await response.text()).slice(0, 300)}`);
    if (location.startsWith(REDIRECT_URI)) {
      if (!new URL(location).searchParams.get('code')) throw new Error(`oidc-provider setup: no code in ${location}`);
      return [...jar]
        .filter(([k, v]) => k.startsWith('_session') && v !== '')
        .map(([k, v]) => `${k}=${v}`)
        .join('; ');
    }
    url = new URL(location, issuer).href;
  }
  throw new Error('oidc-provider setup: too many redirects');
}

let flow: FlowSetup | undefined;
if (flowsWanted()) {
  const cookies: string[] = [];
  for (let chain = 0; chain < chains(); chain++) cookies.push(await signedInBrowser());
  flow = { authorizePath: '/auth', redirectUri: REDIRECT_URI, scope: 'mcp:tools', resource: RESOURCE, cookies };
}

announce({ port, clientId, refreshTokens, flow, machine }, () => {
  server.closeAllConnections();
  server.close();
});
