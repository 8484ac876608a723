/**
 * A real token issuer for the tests, built on `jose`, on a loopback port: OpenID Connect
 * Discovery (`/.well-known/openid-configuration`) and its own key set (`/jwks`), as an enterprise
 * identity provider and a workload platform (a Kubernetes API server, a SPIFFE issuer) publish
 * them. `startEnterpriseIdp` adds what an enterprise IdP does for enterprise-managed
 * authorization: ID tokens for its people, and at its token endpoint RFC 8693 token exchange of
 * such an ID token for an ID-JAG for another authorization server, checked as a real IdP checks
 * it (the requesting client's secret, the ID token's signature, issuer, audience and expiry, every
 * required parameter, a client mapping for the audience).
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLocalJWKSet, exportJWK, generateKeyPair, jwtVerify, SignJWT, type JWK, type JWTPayload } from 'jose';

export interface TestIssuer {
  issuer: string;
  /** Its public signing key, as published. */
  publicJwk: JWK;
  /** Signs `claims` with its key (RS256, kid `key-1` unless `header` says otherwise). */
  sign(claims: JWTPayload, header?: Record<string, unknown>): Promise<string>;
  /** Requests it answered, by path. */
  requests: Map<string, number>;
  close(): Promise<void>;
}

type Route = (req: http.IncomingMessage, body: string) => Promise<{ status: number; body: unknown }>;

export async function startTestIssuer(
  options: { routes?: Record<string, Route>; metadata?: Record<string, unknown> } = {},
): Promise<TestIssuer & { privateKey: CryptoKey }> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const publicJwk: JWK = { ...(await exportJWK(publicKey)), alg: 'RS256', use: 'sig', kid: 'key-1' };
  const requests = new Map<string, number>();
  const server = http.createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
      requests.set(path, (requests.get(path) ?? 0) + 1);
      let body = '';
      for await (const chunk of req) body += String(chunk);
      let answer: { status: number; body: unknown };
      if (path === '/.well-known/openid-configuration' && req.method === 'GET') {
        answer = {
          status: 200,
          body: { issuer, jwks_uri: `${issuer}/jwks`, ...(options.routes?.['/token'] ? { token_endpoint: `${issuer}/token` } : {}), ...options.metadata },
        };
      } else if (path === '/jwks' && req.method === 'GET') {
        answer = { status: 200, body: { keys: [publicJwk] } };
      } else if (options.routes?.[path] && req.method === 'POST') {
        answer = await options.routes[path](req, body);
      } else {
        answer = { status: 404, body: { error: 'not_found' } };
      }
      res.writeHead(answer.status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(answer.body));
    })().catch((error: unknown) => {
      res.writeHead(500);
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    publicJwk,
    privateKey,
    requests,
    sign: (claims, header = {}) => new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'key-1', ...header }).sign(privateKey),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface EnterpriseIdp extends TestIssuer {
  /** The client (an MCP host) registered at the IdP for token exchange. */
  clientId: string;
  clientSecret: string;
  /** An ID token for `subject`, for the IdP's client (what the person's sign-in at the IdP gives it). */
  idToken(subject: string, claims?: JWTPayload): Promise<string>;
  /**
   * The client id the client has at each authorization server (by its issuer, the exchange's
   * `audience`), as an administrator maps it at the IdP: the ID-JAG's `client_id`.
   */
  clientMappings: Map<string, string>;
  /** The scopes the IdP grants, whatever is asked (policy); default: what was asked. */
  grantScopes: ((requested: string | undefined) => string | undefined) | undefined;
}

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ID_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id_token';
const ID_JAG_TYPE = 'urn:ietf:params:oauth:token-type:id-jag';

export async function startEnterpriseIdp(options: { now?: () => number } = {}): Promise<EnterpriseIdp> {
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));
  const clientId = 'mcp-host-at-idp';
  const clientSecret = 'the-mcp-hosts-secret-at-the-idp';
  const clientMappings = new Map<string, string>();
  const state: { grantScopes: EnterpriseIdp['grantScopes'] } = { grantScopes: undefined };
  const oauthError = (error: string, description: string, status = 400) => ({ status, body: { error, error_description: description } });

  const exchange: Route = async (req, body) => {
    const params = new URLSearchParams(body);
    // The requesting client authenticates (Basic or the body).
    const basic = req.headers.authorization?.startsWith('Basic ')
      ? Buffer.from(req.headers.authorization.slice(6), 'base64').toString().split(':').map(decodeURIComponent)
      : undefined;
    const [id, secret] = basic ?? [params.get('client_id'), params.get('client_secret')];
    if (id !== clientId || secret !== clientSecret) return oauthError('invalid_client', 'client authentication failed', 401);
    if (params.get('grant_type') !== TOKEN_EXCHANGE) return oauthError('unsupported_grant_type', 'only token exchange');
    if (params.get('requested_token_type') !== ID_JAG_TYPE) return oauthError('invalid_request', 'requested_token_type must be id-jag');
    if (params.get('subject_token_type') !== ID_TOKEN_TYPE) return oauthError('invalid_request', 'subject_token_type must be id_token');
    const subjectToken = params.get('subject_token');
    const audience = params.get('audience');
    const resource = params.get('resource');
    if (!subjectToken || !audience || !resource) return oauthError('invalid_request', 'subject_token, audience and resource are required');
    let subject: string;
    try {
      const { payload } = await jwtVerify(subjectToken, createLocalJWKSet({ keys: [base.publicJwk] }), {
        issuer: base.issuer,
        audience: clientId,
        currentDate: new Date(now() * 1000),
      });
      subject = payload.sub!;
    } catch (error) {
      return oauthError('invalid_grant', `the subject token is not valid: ${(error as Error).message}`);
    }
    const mapped = clientMappings.get(audience);
    if (!mapped) return oauthError('invalid_target', 'no client is mapped for that audience');
    const scope = state.grantScopes ? state.grantScopes(params.get('scope') ?? undefined) : (params.get('scope') ?? undefined);
    const iat = now();
    const jag = await base.sign(
      {
        iss: base.issuer,
        sub: subject,
        aud: audience,
        resource,
        client_id: mapped,
        jti: randomUUID(),
        iat,
        exp: iat + 300,
        email: `${subject}@example.com`,
        ...(scope ? { scope } : {}),
      },
      { typ: 'oauth-id-jag+jwt' },
    );
    return { status: 200, body: { access_token: jag, issued_token_type: ID_JAG_TYPE, token_type: 'N_A', expires_in: 300, ...(scope ? { scope } : {}) } };
  };

  const base = await startTestIssuer({ routes: { '/token': exchange }, metadata: { grant_types_supported: [TOKEN_EXCHANGE] } });
  return {
    ...base,
    clientId,
    clientSecret,
    clientMappings,
    get grantScopes() {
      return state.grantScopes;
    },
    set grantScopes(value) {
      state.grantScopes = value;
    },
    idToken: (subject, claims = {}) => {
      const iat = now();
      return base.sign({ iss: base.issuer, sub: subject, aud: clientId, iat, exp: iat + 600, ...claims });
    },
  };
}
