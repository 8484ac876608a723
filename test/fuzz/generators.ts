/**
 * The fuzz run's requests, one step at a time from a seeded generator: for every endpoint of
 * `serve`, a valid request from the corpus (real clients, tokens, codes, pages) with a field or
 * three mutated, or garbage; then, now and then, the HTTP message itself broken (methods,
 * targets, headers, framing, bodies) on the way to the wire.
 */
import type { Corpus } from './corpus.js';
import type { FuzzRequest } from './http.js';
import type { Random } from './random.js';

type Pairs = [string, string][];

/** A request before it becomes bytes: parameters still structured, so they can be mutated. */
interface Template {
  label: string;
  method: string;
  path: string;
  query: Pairs;
  body?: { type: 'form'; params: Pairs } | { type: 'raw'; bytes: Buffer };
  contentType?: string;
  headers: Pairs;
}

const PARAM_NAMES = [
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
  'resource',
  'prompt',
  'grant_type',
  'code',
  'code_verifier',
  'refresh_token',
  'client_secret',
  'token',
  'token_type_hint',
  'cursor',
  'csrf',
  'step',
  'username',
  'password',
  'decision',
  'provider',
  'nonce',
  'request',
  'request_uri',
  'response_mode',
  'login_hint',
  'max_age',
  'audience',
];
const PROTOCOL_VERSIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28', '1999-01-01', '', 'latest', '2025-06-18, 2025-03-26'];
const METHODS = ['GET', 'POST', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'PATCH', 'TRACE', 'CONNECT', 'PROPFIND', 'get', 'FOO', 'G\u00c9T'];

const b64url = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
/** encodeURIComponent, which throws on a lone surrogate: that one is sent as it is. */
const encode = (value: string) => {
  try {
    return encodeURIComponent(value);
  } catch {
    return value;
  }
};
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encode(id)}:${encode(secret)}`).toString('base64')}`;

/** Changes one to three of the parameters: drop, repeat, empty, oversize, rename, or a nasty value. */
function mutatePairs(r: Random, pairs: Pairs): Pairs {
  const out: Pairs = pairs.map(([k, v]) => [k, v]);
  for (let n = 1 + (r.chance(0.3) ? r.int(3) : 0); n > 0; n--) {
    const at = r.int(Math.max(out.length, 1));
    const entry = out[at];
    r.weighted<() => void>([
      [2, () => void out.splice(at, 1)],
      [2, () => entry && out.push([entry[0], r.chance(0.5) ? entry[1] : r.nasty(entry[1])])],
      [5, () => entry && (entry[1] = r.nasty(entry[1]))],
      [1, () => entry && (entry[1] = '')],
      [1, () => entry && (entry[1] = 'x'.repeat(r.pick([4097, 70_000])))],
      [1, () => entry && (entry[0] = r.nasty(entry[0]))],
      [2, () => out.push([r.chance(0.8) ? r.pick(PARAM_NAMES) : r.nasty(), r.nasty()])],
      [1, () => out.reverse()],
    ])();
  }
  return out;
}

/** A real JWT with one thing wrong: a bit, the algorithm, the key id, a claim, its shape. */
export function mutateJwt(r: Random, token: string): string {
  const [header = '', payload = '', signature = ''] = token.split('.');
  const decode = (part: string) => Buffer.from(part, 'base64url');
  const json = (part: string): Record<string, unknown> => {
    try {
      return JSON.parse(decode(part).toString('utf8')) as Record<string, unknown>;
    } catch {
      return {};
    }
  };
  return r.weighted<() => string>([
    [
      4,
      () => {
        const parts = [header, payload, signature];
        const i = r.int(3);
        const bytes = decode(parts[i]!);
        if (bytes.length > 0) bytes[r.int(bytes.length)]! ^= 1 << r.int(8);
        parts[i] = bytes.toString('base64url');
        return parts.join('.');
      },
    ],
    [2, () => `${b64url({ ...json(header), alg: 'none' })}.${payload}.`],
    [1, () => `${b64url({ alg: 'none', typ: 'JWT' })}.${payload}.${signature}`],
    [
      1,
      () =>
        `${b64url({ ...json(header), alg: r.pick(['HS256', 'RS256', 'ES512', 'EdDSA', 'none', 'NONE', '', null, 7]) })}.${payload}.${r.bytes(32).toString('base64url')}`,
    ],
    [2, () => `${b64url({ ...json(header), kid: r.chance(0.5) ? r.nasty() : r.json() })}.${payload}.${signature}`],
    [
      1,
      () =>
        `${b64url({ ...json(header), jku: 'http://127.0.0.1:1/jwks', jwk: { kty: 'EC', crv: 'P-256', x: 'AA', y: 'AA' }, crit: ['exp'] })}.${payload}.${signature}`,
    ],
    [
      3,
      () => {
        const claims = json(payload);
        claims[r.pick(['aud', 'exp', 'iss', 'scope', 'sub', 'client_id', 'jti', 'nbf', 'iat', 'cnf'])] = r.chance(0.5) ? r.json() : r.nasty();
        return `${header}.${b64url(claims)}.${signature}`;
      },
    ],
    [1, () => `${header}.${b64url(r.json())}.${signature}`],
    [1, () => `${b64url(r.json())}.${payload}.${signature}`],
    [1, () => token.slice(0, r.int(token.length))],
    [1, () => `${token}.${token}`],
    [1, () => token.replace(/[A-Za-z]/, r.pick(['!', '=', ' ', '+', '/', '\u00e9']))],
    [1, () => `${header}.${'A'.repeat(r.pick([9000, 70_000]))}.${signature}`],
    [1, () => r.nasty(token)],
  ])();
}

/** An Authorization header: usually Bearer with a real or mutated token, sometimes anything. */
function bearer(r: Random, token: string): string | undefined {
  return r.weighted<() => string | undefined>([
    [2, () => `Bearer ${token}`],
    [6, () => `Bearer ${mutateJwt(r, token)}`],
    [1, () => undefined],
    [1, () => `${r.pick(['bearer', 'BEARER', 'Bearer ', 'Bearer\t', 'DPoP', 'Basic', 'Token', ''])} ${r.chance(0.5) ? token : r.nasty()}`],
    [1, () => `Bearer ${token} ${token}`],
    [1, () => r.nasty()],
  ])();
}

/** Client authentication for a confidential client: Basic, post, both, or broken Basic. */
function clientAuth(r: Random, t: Template, client: { client_id: string; client_secret?: string }): void {
  const secret = client.client_secret ?? '';
  const form = t.body?.type === 'form' ? t.body.params : t.query;
  r.weighted<() => void>([
    [5, () => t.headers.push(['Authorization', basic(client.client_id, secret)])],
    [2, () => form.push(['client_id', client.client_id], ['client_secret', secret])],
    [1, () => t.headers.push(['Authorization', basic(client.client_id, r.nasty(secret))])],
    [1, () => t.headers.push(['Authorization', basic(r.nasty(client.client_id), secret)])],
    [
      3,
      () =>
        t.headers.push([
          'Authorization',
          r.pick<() => string>([
            () => `Basic ${r.string(40)}`,
            () => `Basic ${Buffer.from(r.nasty()).toString('base64')}`,
            () => `Basic ${Buffer.from(`${r.nasty()}:${r.nasty()}`, 'latin1').toString('base64')}`,
            () => `Basic ${Buffer.from(`%ZZ:${secret}`).toString('base64')}`,
            () => `Basic ${Buffer.from(`${client.client_id}:${secret}`).toString('base64').replace(/=+$/, '')}`,
            () => `Basic ${Buffer.from(`${client.client_id}:${secret}`).toString('base64')}====`,
            () => `Basic  ${Buffer.from(`${client.client_id}:${secret}`).toString('base64')} x`,
            () => 'Basic',
            () => 'Basic ',
            () => `basic ${Buffer.from(r.bytes(r.length(100))).toString('base64')}`,
          ])(),
        ]),
    ],
    [
      1,
      () => {
        t.headers.push(['Authorization', basic(client.client_id, secret)]);
        form.push(['client_secret', secret]);
      },
    ],
    [1, () => undefined],
  ])();
}

const form = (params: Record<string, string>): Pairs => Object.entries(params);

function metadata(r: Random, c: Corpus): Template {
  const path = r.pick([
    '/.well-known/oauth-authorization-server',
    '/.well-known/oauth-authorization-server/mcp',
    `/.well-known/oauth-authorization-server/${r.nasty()}`,
    '/.well-known/oauth-protected-resource',
    '/.well-known/oauth-protected-resource/mcp',
    `/.well-known/oauth-protected-resource/mcp/${r.nasty()}`,
    '/.well-known/openid-configuration',
    `/.well-known/${r.nasty()}`,
    '/jwks',
    '/revocations',
    '/.well-known/oauth-authorization-server/',
    '/.well-known//oauth-authorization-server',
    '/.well-known/oauth-authorization-server%2fmcp',
    '/.WELL-KNOWN/oauth-authorization-server',
  ]);
  const headers: Pairs = [];
  if (r.chance(0.5)) headers.push([r.pick(['MCP-Protocol-Version', 'Context-Protocol-Version']), r.pick(PROTOCOL_VERSIONS.concat(r.nasty()))]);
  if (r.chance(0.2)) headers.push(['Origin', r.pick(['http://evil.example', 'null', r.nasty()])], ['Access-Control-Request-Method', r.pick(METHODS)]);
  if (r.chance(0.1)) headers.push(['Authorization', `Bearer ${c.accessToken}`]);
  return {
    label: 'metadata',
    method: r.weighted([
      [6, 'GET'],
      [1, 'HEAD'],
      [1, 'OPTIONS'],
      [1, r.pick(METHODS)],
    ]),
    path,
    query: r.chance(0.1) ? mutatePairs(r, []) : [],
    headers,
  };
}

function register(r: Random, c: Corpus): Template {
  const valid: Record<string, unknown> = {
    client_name: 'Fuzz client',
    redirect_uris: ['http://127.0.0.1:33333/callback'],
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    scope: 'mcp:tools',
  };
  const value = r.weighted<() => unknown>([
    [2, () => r.json()],
    [
      6,
      () => {
        const body: Record<string, unknown> = { ...valid };
        for (let n = 1 + r.int(3); n > 0; n--) {
          const key = r.weighted([
            [
              6,
              r.pick([
                ...Object.keys(valid),
                'client_uri',
                'logo_uri',
                'jwks_uri',
                'jwks',
                'tos_uri',
                'policy_uri',
                'software_id',
                'software_statement',
                'contacts',
                'application_type',
                'client_id',
                'client_secret',
                'client_id_issued_at',
              ]),
            ],
            [1, r.pick(['__proto__', 'constructor', r.nasty()])],
          ]);
          body[key] = r.weighted<() => unknown>([
            [3, () => r.json()],
            [3, () => r.nasty(typeof body[key] === 'string' ? (body[key] as string) : undefined)],
            [2, () => [r.nasty(), ...(r.chance(0.5) ? ['http://127.0.0.1:33333/callback'] : [])]],
            [1, () => Array.from({ length: r.pick([100, 1000, 5000]) }, () => 'http://127.0.0.1:33333/callback')],
            [1, () => `${c.documentBase}/d/${r.int(1_000_000)}`],
            [1, () => undefined],
          ])();
        }
        return body;
      },
    ],
  ])();
  const text = r.chance(0.05)
    ? r.pick([`${'['.repeat(30_000)}`, '{"a":', '{"a":1,"a":2}', '\ufeff{}', '{"redirect_uris":["http://127.0.0.1:33333/cb"]}\u0000'])
    : (JSON.stringify(value) ?? 'null');
  const headers: Pairs = r.chance(0.1) ? [['Authorization', `Bearer ${r.nasty()}`]] : [];
  return {
    label: 'register',
    method: 'POST',
    path: '/register',
    query: [],
    body: { type: 'raw', bytes: Buffer.from(text) },
    contentType: 'application/json',
    headers,
  };
}

function authorize(r: Random, c: Corpus): Template {
  let params = form(c.authorizeParams);
  params = r.weighted<() => Pairs>([
    [6, () => mutatePairs(r, params)],
    [
      1,
      () =>
        params.map(([k, v]): [string, string] => (k === 'client_id' ? [k, `${c.documentBase}${r.chance(0.3) ? '/ok' : `/d/${r.int(1_000_000)}`}`] : [k, v])),
    ],
    [
      1,
      () =>
        mutatePairs(
          r,
          params.map(([k, v]): [string, string] => (k === 'client_id' ? [k, `${c.documentBase}/ok`] : [k, v])),
        ),
    ],
    [1, () => Array.from({ length: r.int(8) }, (): [string, string] => [r.pick(PARAM_NAMES), r.nasty()])],
  ])();
  const headers: Pairs = r.chance(0.5) ? [['Cookie', r.chance(0.8) ? c.sessionCookie : r.nasty(c.sessionCookie)]] : [];
  const post = r.chance(0.3);
  return post
    ? {
        label: 'authorize (POST)',
        method: 'POST',
        path: '/authorize',
        query: [],
        body: { type: 'form', params },
        contentType: 'application/x-www-form-urlencoded',
        headers,
      }
    : { label: 'authorize (GET)', method: 'GET', path: '/authorize', query: params, headers };
}

function interaction(r: Random, c: Corpus): Template {
  const page = r.chance(0.5) ? c.login : c.consent;
  const path = r.weighted([
    [8, page.path],
    [1, `/interaction/${r.nasty()}`],
    [1, r.mutateString(page.path)],
  ]);
  const cookie = r.weighted<string | undefined>([
    [8, page.cookie],
    [1, undefined],
    [1, r.nasty(page.cookie)],
  ]);
  const headers: Pairs = cookie === undefined ? [] : [['Cookie', cookie]];
  if (r.chance(0.2)) return { label: `interaction page (${page.kind})`, method: 'GET', path, query: r.chance(0.2) ? mutatePairs(r, []) : [], headers };
  const values: Record<string, string> =
    page.kind === 'login'
      ? { csrf: page.csrf, step: 'login', username: 'bob', password: r.chance(0.5) ? 'battery staple horse' : r.nasty() }
      : { csrf: page.csrf, step: 'consent', decision: r.pick(['approve', 'deny']) };
  const params = r.chance(0.15) ? ([...form(values), ['step', 'upstream'], ['provider', r.nasty()]] as Pairs) : mutatePairs(r, form(values));
  return {
    label: `interaction post (${page.kind})`,
    method: 'POST',
    path,
    query: [],
    body: { type: 'form', params },
    contentType: 'application/x-www-form-urlencoded',
    headers,
  };
}

function token(r: Random, c: Corpus): Template {
  const post = (label: string, params: Pairs): Template => ({
    label,
    method: 'POST',
    path: '/token',
    query: [],
    body: { type: 'form', params },
    contentType: 'application/x-www-form-urlencoded',
    headers: [],
  });
  return r.weighted<() => Template>([
    [3, () => post('token: mutated code redemption', mutatePairs(r, form(c.codeRedemption)))],
    [
      3,
      () =>
        post(
          'token: mutated refresh',
          mutatePairs(
            r,
            form({
              grant_type: 'refresh_token',
              refresh_token: c.refreshToken,
              client_id: c.publicClient.client_id,
              ...(r.chance(0.5) ? { resource: c.resource } : {}),
              ...(r.chance(0.3) ? { scope: 'mcp:tools' } : {}),
            }),
          ),
        ),
    ],
    [
      2,
      () => {
        const t = post('token: client_credentials', mutatePairs(r, form({ grant_type: 'client_credentials', resource: c.resource, scope: 'mcp:tools' })));
        clientAuth(r, t, c.serviceClient);
        return t;
      },
    ],
    [
      2,
      () => {
        const t = post(
          'token: confidential client',
          mutatePairs(
            r,
            form({
              grant_type: r.pick(['authorization_code', 'refresh_token']),
              code: c.codeRedemption.code!,
              refresh_token: c.refreshToken,
              code_verifier: c.codeRedemption.code_verifier!,
              redirect_uri: c.codeRedemption.redirect_uri!,
            }),
          ),
        );
        clientAuth(r, t, c.confidentialClient);
        return t;
      },
    ],
    [
      1,
      () =>
        post(
          'token: code of a metadata-document client',
          mutatePairs(r, form({ ...c.codeRedemption, client_id: `${c.documentBase}${r.chance(0.5) ? '/ok' : `/d/${r.int(1_000_000)}`}` })),
        ),
    ],
    [
      1,
      () =>
        post('token: any grant', [
          [
            'grant_type',
            r.pick([
              'password',
              'implicit',
              'urn:ietf:params:oauth:grant-type:device_code',
              'urn:ietf:params:oauth:grant-type:token-exchange',
              'urn:ietf:params:oauth:grant-type:jwt-bearer',
              r.nasty(),
            ]),
          ],
          ...mutatePairs(r, form({ client_id: c.publicClient.client_id })),
        ]),
    ],
  ])();
}

function revokeOrIntrospect(r: Random, c: Corpus): Template {
  const path = r.pick(['/revoke', '/introspect', '/revocations']);
  const tokens = [c.accessToken, c.refreshToken, c.serviceAccessToken, mutateJwt(r, c.accessToken), r.nasty(c.refreshToken), r.nasty()];
  const params: Pairs =
    path === '/revocations'
      ? r.chance(0.7)
        ? [['cursor', r.pick(['0', '1', String(Math.floor(Date.now() / 1000)), '-1', '1e400', '1.5', r.nasty()])]]
        : []
      : [['token', r.pick(tokens)], ...(r.chance(0.4) ? [['token_type_hint', r.pick(['access_token', 'refresh_token', r.nasty()])] as [string, string]] : [])];
  const t: Template = {
    label: path,
    method: 'POST',
    path,
    query: [],
    body: { type: 'form', params: r.chance(0.5) ? mutatePairs(r, params) : params },
    contentType: 'application/x-www-form-urlencoded',
    headers: [],
  };
  const client =
    path === '/revoke'
      ? r.pick([c.publicClient, c.confidentialClient, c.introspector])
      : r.pick([c.introspector, c.introspector, c.serviceClient, c.publicClient]);
  if (client.client_secret === undefined && r.chance(0.8)) (t.body as { params: Pairs }).params.push(['client_id', client.client_id]);
  else clientAuth(r, t, client);
  return t;
}

function jsonRpc(r: Random): unknown {
  const method = r.weighted([
    [
      6,
      r.pick([
        'initialize',
        'tools/list',
        'tools/call',
        'server/discover',
        'ping',
        'notifications/initialized',
        'resources/list',
        'prompts/list',
        'completion/complete',
        'logging/setLevel',
      ]),
    ],
    [1, r.nasty()],
  ]);
  const params =
    method === 'tools/call'
      ? {
          name: r.pick(['whoami', 'admin_report', 'upstream_userinfo', r.nasty()]),
          arguments: r.chance(0.7) ? {} : r.json(),
          ...(r.chance(0.3) ? { _meta: r.json() } : {}),
        }
      : method === 'initialize'
        ? { protocolVersion: r.pick(PROTOCOL_VERSIONS), capabilities: r.chance(0.7) ? {} : r.json(), clientInfo: { name: r.nasty(), version: '1' } }
        : r.chance(0.5)
          ? undefined
          : r.json();
  const message: Record<string, unknown> = {
    jsonrpc: r.weighted([
      [8, '2.0'],
      [1, r.nasty()],
    ]),
    method,
    ...(params === undefined ? {} : { params }),
  };
  if (r.chance(0.85))
    message.id = r.weighted<unknown>([
      [6, r.int(1000)],
      [2, r.nasty()],
      [1, null],
      [1, r.json()],
    ]);
  if (r.chance(0.15)) delete message[r.pick(['jsonrpc', 'method', 'params'])];
  return message;
}

function mcp(r: Random, c: Corpus): Template {
  const headers: Pairs = [];
  const authorization = bearer(r, r.chance(0.8) ? c.accessToken : c.serviceAccessToken);
  if (authorization !== undefined) headers.push(['Authorization', authorization]);
  headers.push([
    'Accept',
    r.weighted([
      [6, 'application/json, text/event-stream'],
      [1, 'application/json'],
      [1, 'text/event-stream'],
      [1, r.nasty()],
    ]),
  ]);
  if (r.chance(0.8)) headers.push(['MCP-Protocol-Version', r.pick(PROTOCOL_VERSIONS)]);
  if (r.chance(0.2)) headers.push(['Mcp-Session-Id', r.nasty()]);
  if (r.chance(0.2)) headers.push(['Mcp-Method', r.nasty()], ['Mcp-Name', r.nasty()]);
  const method = r.weighted([
    [8, 'POST'],
    [1, 'GET'],
    [1, 'DELETE'],
    [1, r.pick(METHODS)],
  ]);
  const value = r.weighted<() => unknown>([
    [6, () => jsonRpc(r)],
    [1, () => Array.from({ length: r.int(4) }, () => jsonRpc(r))],
    [1, () => r.json()],
  ])();
  const text = r.chance(0.05)
    ? r.pick(['{', '', 'null', '[]', '{"jsonrpc":"2.0"', '\ufeff{"jsonrpc":"2.0","method":"ping","id":1}'])
    : (JSON.stringify(value) ?? 'null');
  return {
    label: 'mcp',
    method,
    path: r.weighted([
      [12, '/mcp'],
      [1, '/mcp/'],
      [1, `/mcp/${r.nasty()}`],
      [1, '/MCP'],
    ]),
    query: r.chance(0.05) ? mutatePairs(r, []) : [],
    body: method === 'GET' ? undefined : { type: 'raw', bytes: Buffer.from(text) },
    contentType: 'application/json',
    headers,
  };
}

function upstreamCallback(r: Random, c: Corpus): Template {
  const query = r.chance(0.8)
    ? mutatePairs(r, form(c.upstreamCallback.query))
    : form({ error: r.pick(['access_denied', 'server_error', r.nasty()]), error_description: r.nasty(), state: c.upstreamCallback.query.state! });
  const cookie = r.weighted<string | undefined>([
    [8, c.upstreamCallback.cookie],
    [1, undefined],
    [1, r.nasty(c.upstreamCallback.cookie)],
  ]);
  return {
    label: 'upstream callback',
    method: r.weighted([
      [9, 'GET'],
      [1, r.pick(METHODS)],
    ]),
    path: '/upstream/callback',
    query,
    headers: cookie === undefined ? [] : [['Cookie', cookie]],
  };
}

function anywhere(r: Random): Template {
  return {
    label: 'random path',
    method: r.pick(METHODS),
    path: r.pick([
      '/',
      '',
      '/upstream/callback',
      '/interaction',
      '/interaction/',
      '/token/',
      '/register/x',
      `/${r.nasty()}`,
      '/%2e%2e/%2e%2e/etc/passwd',
      '//',
      '/\u0000',
    ]),
    query: r.chance(0.3) ? mutatePairs(r, []) : [],
    headers: [],
  };
}

const ENDPOINTS: readonly (readonly [number, (r: Random, c: Corpus) => Template])[] = [
  [2, metadata],
  [3, register],
  [4, authorize],
  [2, interaction],
  [5, token],
  [3, revokeOrIntrospect],
  [5, mcp],
  [1, upstreamCallback],
  [1, anywhere],
];

function encodePairs(r: Random, pairs: Pairs): string {
  // Mostly encoded properly; sometimes raw, so that unencoded separators and bytes reach the parser.
  if (r.chance(0.9)) return new URLSearchParams(pairs).toString();
  return pairs.map(([k, v]) => `${k}=${v}`).join(r.pick(['&', ';', '&&']));
}

/** The template as a request on the wire, the message itself broken now and then. */
function toRequest(r: Random, t: Template): FuzzRequest {
  const query = t.query.length > 0 ? `?${encodePairs(r, t.query)}` : '';
  let body: Buffer | undefined;
  if (t.body?.type === 'form') body = Buffer.from(encodePairs(r, t.body.params));
  else if (t.body?.type === 'raw') body = t.body.bytes;
  const headers: Pairs = [...t.headers];
  if (body !== undefined && t.contentType) {
    headers.push([
      'Content-Type',
      r.weighted([
        [12, t.contentType],
        [1, `${t.contentType}; charset=utf-8`],
        [
          1,
          r.pick([
            'text/plain',
            'application/json',
            'application/x-www-form-urlencoded',
            'multipart/form-data; boundary=x',
            '',
            'APPLICATION/JSON',
            `${t.contentType}, ${t.contentType}`,
          ]),
        ],
        [1, r.nasty()],
      ]),
    ]);
  }
  // An address of its own now and then (serve trusts 127.0.0.1 as a proxy here), and a broken X-Forwarded-For.
  if (r.chance(0.5))
    headers.push([
      'X-Forwarded-For',
      r.weighted([
        [6, `10.${r.int(256)}.${r.int(256)}.${r.int(256)}`],
        [1, `::ffff:10.0.0.${r.int(256)}`],
        [1, r.pick(['', ',', 'unknown', '1.2.3.4, 127.0.0.1', '::1', '999.1.1.1', 'a'.repeat(5000)])],
        [1, r.nasty()],
      ]),
    ]);
  const request: FuzzRequest = { label: t.label, method: t.method, target: `${t.path}${query}`, headers, body };
  if (r.chance(0.8)) return request;
  return breakMessage(r, request);
}

/** Breaks the HTTP message: the kind of request no client library sends. */
function breakMessage(r: Random, request: FuzzRequest): FuzzRequest {
  const broken: FuzzRequest = { ...request, headers: [...request.headers], label: `${request.label}, message broken` };
  const body = request.body ?? Buffer.alloc(0);
  r.weighted<() => void>([
    [3, () => (broken.framing = 'chunked')],
    [1, () => (broken.method = r.pick(METHODS))],
    [
      1,
      () =>
        (broken.target = r.pick([
          `${request.target}#frag`,
          `//${request.target}`,
          `http://127.0.0.1${request.target}`,
          '*',
          `${request.target}%`,
          `${request.target}\u00e9`,
          request.target + '/'.repeat(100),
          `${request.target}?${'a=1&'.repeat(2000)}`,
        ])),
    ],
    [1, () => (broken.version = r.pick(['HTTP/1.0', 'HTTP/2.0', 'HTTP/9.9', 'HTTP/1.1x', '']))],
    [1, () => (broken.noHost = true)],
    [1, () => broken.headers.push(['Host', r.nasty()])],
    [
      2,
      () =>
        broken.headers.push([
          r.pick([
            'X-Fuzz',
            'Content-Type',
            'Authorization',
            'Cookie',
            'Accept',
            'Origin',
            'Expect',
            'Content-Encoding',
            'Transfer-Encoding',
            'Range',
            'If-None-Match',
          ]),
          r.nasty(),
        ]),
    ],
    [1, () => broken.headers.push(['X-Big', 'a'.repeat(r.pick([8000, 17_000, 70_000]))])],
    [1, () => broken.headers.push(...Array.from({ length: r.pick([100, 2100]) }, (_, i): [string, string] => [`X-H${i}`, 'v']))],
    [1, () => broken.headers.push([r.pick(['Bad Name', 'x\u0000', 'é', '', ':authority']), 'v'])],
    [1, () => broken.headers.push(['X-Ctl', `a${r.pick(['\u0000', '\u007f', '\r', '\u0001'])}b`])],
    [1, () => broken.headers.push(['Expect', '100-continue'])],
    [1, () => broken.headers.push(['Content-Encoding', r.pick(['gzip', 'deflate', 'br', 'identity', 'x'])])],
    [
      1,
      () => {
        broken.framing = 'raw';
        const framing = r.pick<[string, string][]>([
          [['Content-Length', String(Math.max(0, body.length - 3))]],
          [['Content-Length', '-1']],
          [['Content-Length', 'abc']],
          [
            ['Content-Length', `${body.length}`],
            ['Content-Length', `${body.length + 1}`],
          ],
          [
            ['Content-Length', `${body.length}`],
            ['Transfer-Encoding', 'chunked'],
          ],
          [['Transfer-Encoding', 'gzip, chunked']],
          [['Content-Length', '99999999999999999999']],
          [],
        ]);
        broken.headers.push(...framing);
        // A chunked body that is not one: it must fail to parse, not look unfinished (the server
        // rightly waits for the rest of an unfinished message, until its request timeout).
        if (framing.some(([name]) => name === 'Transfer-Encoding')) broken.body = Buffer.concat([Buffer.from('x'), body]);
      },
    ],
    [2, () => (broken.body = Buffer.concat([body, r.bytes(r.length(200))]))],
    [1, () => (broken.body = Buffer.from([0xc3, 0x28, 0xed, 0xa0, 0x80, 0xff, 0xfe]))],
    [1, () => (broken.body = Buffer.alloc(r.pick([65_537, 70_000, request.target.startsWith('/mcp') ? 1_100_000 : 66_000]), 0x61))],
  ])();
  return broken;
}

/** Step `step`'s request: the same for the same seed and corpus, whatever ran before it. */
export function generate(r: Random, corpus: Corpus): FuzzRequest {
  return toRequest(r, r.weighted(ENDPOINTS)(r, corpus));
}
