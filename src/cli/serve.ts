import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { auditRecord, createAuthorizationServer, type AuditRecord, type ClientAssertionAudience, type UpstreamOptions } from '../authorization-server/index.js';
import { protectedResourceMetadataUrl } from '../resource-server/index.js';
import { canonicalizeResourceUri, isLoopbackHost, normalizeIssuer, printableJson, privateUseSchemeProblem, wellKnownUrl } from '../core/index.js';
import { parseArgs } from 'node:util';
import { getHeapStatistics } from 'node:v8';
import { isMainThread } from 'node:worker_threads';
import { COMMON_OPTIONS, STORE_OPTIONS, parsed, print, shellQuoted } from './args.js';
import { coHostedApp } from './co-hosted-app.js';
import { dataFolder, openStore } from './data.js';
import { loadSecretBox } from './secret-key.js';
import { UPSTREAM_HELP, UPSTREAM_OPTIONS, upstreamOptions, wantsUpstream } from './upstream-options.js';
import { JWT_BEARER_HELP, JWT_BEARER_OPTIONS, jwtBearerOptions } from './jwt-bearer-options.js';
import { CliError, usageError } from './errors.js';
import { onStopSignal } from './stop-signal.js';
import { onReopenSignal } from './reopen-signal.js';
import { AuditFile } from './audit-file.js';
import { periodicSweep } from './periodic-sweep.js';
import { defaultPerAddress, limitConnections } from './connection-limits.js';
import { clientDocumentLimitsBanner, RATE_LIMIT_HELP, rateLimitBanner, rateLimitOptions, trustProxyOption } from './rate-limit-options.js';

export const SERVE_HELP = `context-auth serve [options]
  --port N                 port to listen on (default 8080; 0 picks a free one)
  --host H                 address to listen on (default 127.0.0.1)
  --issuer URL             public URL of this server (default http://<host>:<port>); https unless loopback
  --tls-cert F --tls-key F serve https directly
  --resource URL           another context server this server issues tokens for (repeatable)
  --registration MODE      open (default) | closed | token (needs CONTEXT_AUTH_REGISTRATION_TOKEN)
  --registration-ttl S     delete dynamically registered clients unused this long (default 2592000, 30 days; 0 never)
  --allow-redirect-scheme SCHEME
                           also accept redirect URIs of a native app's own scheme (RFC 8252 §7.1
                           private-use, such as cursor or com.example.app; repeatable; never http,
                           https, javascript, data, file or another scheme with a meaning of its own),
                           matched exactly; the consent page says the app returns to an app on the device
  --access-token-ttl S     access token lifetime in seconds (default 600)
  --header-timeout S       close a connection whose request headers (or TLS handshake) take longer
                           (default 10)
  --max-connections N      connections open at once (default 1000); at the cap, a new one takes the
                           place of the oldest without a request in progress (idle, or still sending
                           its headers), and is refused when every one has a request in progress
  --max-connections-per-address N
                           connections one client address (IPv6: its /64) may hold at once (default a
                           tenth of --max-connections; 0 no limit); the excess is closed unanswered.
                           Counted by the connection's peer; a --trust-proxy peer is not limited
  --data DIR               data folder (default $CONTEXT_AUTH_DATA or ~/.local/share/context-auth)
  --store URL              a postgres:// database instead (or $CONTEXT_AUTH_STORE), for replicas
  --quiet                  no audit log lines on stderr
  --audit-log FILE         also append the audit lines to FILE (created 0600); SIGHUP reopens it, for logrotate
  --audit-retention DAYS   keep the audit events in the store this many days, for the admin console
                           (default 30; 0 keeps none)
  --dpop-nonce             DPoP proofs at /token must carry a recent nonce from this server (RFC 9449 §8)
  --client-assertion-audience MODE
                           the aud a private_key_jwt client assertion may carry: issuer (default; the
                           issuer alone, as a single string) | issuer-or-token-endpoint (also the token
                           endpoint URL, or a list of nothing but these two)
  --metrics                serve Prometheus metrics at <issuer>/metrics, to this machine only
  --metrics-token TOKEN    with --metrics: serve them to any address that sends Authorization: Bearer TOKEN
                           (at least 16 characters; or $CONTEXT_AUTH_METRICS_TOKEN, kept out of the
                           process list; the flag wins when both are set)
  --client-documents MODE  accept an https URL as client_id (a client ID metadata document): on | off |
                           follow-registration (default: accepted only when --registration is open)
  --client-document-host H   accept documents only from these hosts (repeatable; default any public host)
  --allow-insecure-client-documents  accept documents at http://127.0.0.1, and the jwks_uri they name there
                           (tests only)
  --admin-email EMAIL      make a person signing in through a provider with this email, verified by the
                           provider, an administrator at <issuer>/admin (repeatable)
  --admin-reauth-minutes N an admin console change needs a sign-in younger than this (default 10)
${RATE_LIMIT_HELP}
Sign-in through an identity provider (callback to register there: <issuer>/upstream/callback):
${UPSTREAM_HELP}
The jwt-bearer grant: enterprise IdPs' ID-JAGs and workload identity:
${JWT_BEARER_HELP}`;

const SWEEP_INTERVAL_MS = 10 * 60 * 1000;
/** How long a stop (SIGTERM, Ctrl-C) lets the requests in flight finish before it cuts them off. */
const DRAIN_MS = 10_000;
/** While stopping, how often the connections that have gone idle are closed. */
const DRAIN_POLL_MS = 50;

type Connections = { closeIdleConnections?(): void; closeAllConnections?(): void };

function listenAddress(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

function integer(name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < min || parsed > max) throw usageError(`--${name} must be a whole number from ${min} to ${max}`);
  return parsed;
}

/** --admin-email (checked as the library checks it) and --admin-reauth-minutes. */
function adminOption(emails: string[] | undefined, reauthMinutes: string | undefined): { emails: string[]; reauthSeconds: number } {
  for (const email of emails ?? []) if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw usageError(`--admin-email ${email} is not an email address`);
  return { emails: emails ?? [], reauthSeconds: integer('admin-reauth-minutes', reauthMinutes, 10, 1, 24 * 60) * 60 };
}

function clientAssertionAudience(mode: string | undefined): ClientAssertionAudience {
  if (mode === undefined) return 'issuer';
  if (mode === 'issuer' || mode === 'issuer-or-token-endpoint') return mode;
  throw usageError('--client-assertion-audience must be issuer or issuer-or-token-endpoint');
}

/** --allow-redirect-scheme, checked as the library checks allowedRedirectSchemes, lowercase. */
function redirectSchemesOption(schemes: string[] | undefined): string[] {
  for (const scheme of schemes ?? []) {
    const problem = privateUseSchemeProblem(scheme);
    if (problem) throw usageError(`--allow-redirect-scheme ${problem}`);
  }
  return [...new Set((schemes ?? []).map((scheme) => scheme.toLowerCase()))];
}

function registrationPolicy(mode: string | undefined): 'open' | 'closed' | { initialAccessToken: string } {
  if (mode === undefined || mode === 'open') return 'open';
  if (mode === 'closed') return 'closed';
  if (mode === 'token') {
    const token = process.env.CONTEXT_AUTH_REGISTRATION_TOKEN;
    if (!token || token.length < 16) throw new CliError('--registration token needs CONTEXT_AUTH_REGISTRATION_TOKEN set to at least 16 characters.');
    return { initialAccessToken: token };
  }
  throw usageError('--registration must be open, closed or token');
}

export const SERVE_OPTIONS = {
  ...COMMON_OPTIONS,
  ...STORE_OPTIONS,
  port: { type: 'string' },
  host: { type: 'string' },
  issuer: { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  resource: { type: 'string', multiple: true },
  registration: { type: 'string' },
  'registration-ttl': { type: 'string' },
  'allow-redirect-scheme': { type: 'string', multiple: true },
  'access-token-ttl': { type: 'string' },
  'header-timeout': { type: 'string' },
  'max-connections': { type: 'string' },
  'max-connections-per-address': { type: 'string' },
  quiet: { type: 'boolean' },
  'audit-log': { type: 'string' },
  'audit-retention': { type: 'string' },
  'dpop-nonce': { type: 'boolean' },
  'client-assertion-audience': { type: 'string' },
  metrics: { type: 'boolean' },
  'metrics-token': { type: 'string' },
  'client-documents': { type: 'string' },
  'client-document-host': { type: 'string', multiple: true },
  'allow-insecure-client-documents': { type: 'boolean' },
  'rate-limit': { type: 'string', multiple: true },
  'trust-proxy': { type: 'string', multiple: true },
  'admin-email': { type: 'string', multiple: true },
  'admin-reauth-minutes': { type: 'string' },
  ...UPSTREAM_OPTIONS,
  ...JWT_BEARER_OPTIONS,
} as const;

export async function serveCommand(args: string[]): Promise<void> {
  const { values, positionals } = parsed(() => parseArgs({ args, options: SERVE_OPTIONS, allowPositionals: true, strict: true }));
  if (values.help) return print(SERVE_HELP);
  if (positionals.length > 0) throw usageError(`unexpected argument ${positionals[0]}`);
  const host = values.host ?? '127.0.0.1';
  const port = integer('port', values.port, 8080, 0, 65535);
  const accessTokenTtl = integer('access-token-ttl', values['access-token-ttl'], 600, 30, 86400);
  const headerTimeoutMs = integer('header-timeout', values['header-timeout'], 10, 1, 60) * 1000;
  const maxConnections = integer('max-connections', values['max-connections'], 1000, 1, 100_000);
  const perAddress = integer('max-connections-per-address', values['max-connections-per-address'], defaultPerAddress(maxConnections), 0, 100_000);
  const registration = registrationPolicy(values.registration);
  const assertionAudience = clientAssertionAudience(values['client-assertion-audience']);
  const registrationTtl = integer('registration-ttl', values['registration-ttl'], 30 * 24 * 3600, 0, 10 * 365 * 24 * 3600);
  const allowedRedirectSchemes = redirectSchemesOption(values['allow-redirect-scheme']);
  const documentsFlag = values['client-documents'] ?? 'follow-registration';
  if (!['on', 'off', 'follow-registration'].includes(documentsFlag)) throw usageError('--client-documents must be on, off or follow-registration');
  const clientIdMetadataDocuments = {
    // A document creates a client: by default only where anyone may register one.
    enabled: documentsFlag === 'follow-registration' ? registration === 'open' : documentsFlag === 'on',
    allowHosts: values['client-document-host'] ?? [],
    allowLoopbackHttp: values['allow-insecure-client-documents'] ?? false,
  };
  const rateLimits = rateLimitOptions(values['rate-limit']);
  const trustProxy = trustProxyOption(values['trust-proxy']);
  const metrics = metricsOption(values.metrics, values['metrics-token'] ?? process.env.CONTEXT_AUTH_METRICS_TOKEN, values['metrics-token'] !== undefined);
  const auditRetentionDays = integer('audit-retention', values['audit-retention'], 30, 0, 100 * 365);
  const admin = adminOption(values['admin-email'], values['admin-reauth-minutes']);
  if (Boolean(values['tls-cert']) !== Boolean(values['tls-key'])) throw usageError('--tls-cert and --tls-key go together');
  const tls = values['tls-cert'] && values['tls-key'] ? readTls(values['tls-cert'], values['tls-key']) : undefined;

  // The authorization endpoints MUST be served over https (spec, "Authorization server rules");
  // plain http is for this machine only, or behind a proxy that terminates TLS for an https issuer.
  const loopback = isLoopbackHost(host);
  if (!loopback && !tls && !values.issuer?.startsWith('https://')) {
    throw new CliError(`Refusing plain http on ${host}: give --tls-cert/--tls-key, or an https --issuer when a proxy terminates TLS.`);
  }
  if (!loopback && !values.issuer) throw new CliError(`Give --issuer, the public URL clients reach this server at, when listening on ${host}.`);

  // Upstream sign-in is read before anything starts, so a bad flag stops us with nothing open.
  const sharedStore = Boolean(values.store ?? process.env.CONTEXT_AUTH_STORE);
  const upstream = wantsUpstream(values)
    ? upstreamOptions(values, () => loadSecretBox({ dataFolder: sharedStore ? null : dataFolder(values.data) }).box)
    : undefined;
  if (!upstream && values['local-users'] === 'off') throw usageError('--local-users off needs at least one --upstream-issuer or --upstream-config');
  const jwtBearer = jwtBearerOptions(values, ['mcp:tools', 'mcp:admin']);

  const { store, location, created } = await openStore(values, { create: true });
  let handler: (request: Request, env: object) => Response | Promise<Response> = () => new Response('starting', { status: 503 });
  // Idle or slow sockets must not accumulate: headers (and whole requests) that take too long are
  // cut off, well before Node's 60 s default, checked every second rather than every 30; a TLS
  // handshake gets the same time as the headers, not Node's 120 s; and a connection cap.
  const timeouts = {
    headersTimeout: headerTimeoutMs,
    requestTimeout: Math.max(headerTimeoutMs, 30_000),
    keepAliveTimeout: Math.min(5_000, headerTimeoutMs),
    connectionsCheckingInterval: Math.min(1_000, headerTimeoutMs),
    ...(tls ? { handshakeTimeout: headerTimeoutMs } : {}),
  };
  // The socket's peer address of each request, for rate limits and throttling sign-in by address
  // (behind a proxy this is the proxy's, unless --trust-proxy names it).
  const peers = new WeakMap<Request, string>();
  let stopping = false;
  const server = createAdaptorServer({
    fetch: async (request: Request, env: { incoming?: { socket?: { remoteAddress?: string } }; outgoing?: { setHeader?(name: string, value: string): unknown } }) => {
      const address = env?.incoming?.socket?.remoteAddress;
      if (address) peers.set(request, address);
      // The Node request goes along (as c.env.incoming): the endpoints read small bodies straight from it.
      const response = await handler(request, env);
      // While stopping, each answer ends its connection, so the client's next request goes elsewhere.
      if (stopping) env?.outgoing?.setHeader?.('connection', 'close');
      return response;
    },
    serverOptions: { ...timeouts, ...(tls ?? {}) },
    ...(tls ? { createServer: createHttpsServer } : {}),
  });
  limitConnections(server, { maxConnections, perAddress, trustProxy });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE') reject(new CliError(`Port ${port} on ${host} is in use; choose another with --port.`));
      else if (error.code === 'EACCES') reject(new CliError(`Not allowed to listen on ${listenAddress(host, port)}; choose a port above 1023.`));
      else reject(new CliError(`Cannot listen on ${listenAddress(host, port)}: ${error.message}`));
    });
    server.listen(port, host, () => resolve());
  }).catch(async (error: unknown) => {
    await store.close();
    throw error;
  });
  const actualPort = (server.address() as AddressInfo).port;

  let issuer: string;
  try {
    issuer = normalizeIssuer(values.issuer ?? `${tls ? 'https' : 'http'}://${listenAddress(host, actualPort)}`);
  } catch (error) {
    server.close();
    await store.close();
    throw new CliError(`Invalid --issuer: ${(error as Error).message}.`);
  }
  const defaultResource = `${issuer}/mcp`;
  let resources: string[];
  try {
    resources = [...new Set([defaultResource, ...(values.resource ?? []).map((r) => canonicalizeResourceUri(r))])];
  } catch {
    server.close();
    await store.close();
    throw new CliError('Every --resource must be an absolute http(s) URL without a fragment.');
  }
  let auditFile: AuditFile | null;
  try {
    auditFile = openAuditFile(values['audit-log']);
  } catch (error) {
    server.close();
    await store.close();
    throw error;
  }
  const stopReopening = auditFile ? onReopenSignal(() => auditFile?.reopen()) : () => {};
  // Quiet and without a file, no line is made: the store's writer takes the record as it is.
  const log = values.quiet && !auditFile ? undefined : (record: AuditRecord) => {
    const line = `${printableJson(record)}\n`;
    if (!values.quiet) process.stderr.write(line);
    auditFile?.write(line);
  };
  const authorizationServer = createAuthorizationServer({
    issuer, store, resources, registration, registrationTtl, allowedRedirectSchemes, accessTokenTtl, ...(log ? { log } : {}), clientIdMetadataDocuments,
    clientAddress: (request) => peers.get(request), trustProxy, rateLimits, ...(upstream ? { upstream } : {}), ...jwtBearer,
    ...(values['dpop-nonce'] ? { dpop: { nonce: true } } : {}),
    clientAssertionAudience: assertionAudience,
    ...(metrics ? { metrics } : {}),
    auditEvents: { retentionDays: auditRetentionDays },
    admin,
  });
  // The clients workload rules name, made now so `clients list` shows them before their first token.
  await authorizationServer.workloadClientsReady().catch(async (error: unknown) => {
    server.close();
    await authorizationServer.close();
    await store.close();
    throw new CliError(`--workload-config: ${(error as Error).message}.`);
  });
  await authorizationServer.keys.publicJwks(); // creates the first signing key now rather than on the first request
  // The co-hosted /mcp refuses revoked tokens at once: this process's revocations before the
  // response, other processes' (the CLI, replicas) within a second (SQLite) or at once (PostgreSQL).
  await authorizationServer.revocations.start();
  // Discovery now, so a mistyped issuer shows at start; a provider that is down is retried on use.
  await authorizationServer.upstreamReady().catch((error: unknown) => process.stderr.write(`warning: ${(error as Error).message}\n`));

  const app = coHostedApp(authorizationServer, {
    resource: defaultResource,
    demo: {
      upstream: upstream ? (auth) => authorizationServer.upstreamAccess(auth.claims) : undefined,
      user: async (subject) => {
        const user = await store.getUser({ id: subject });
        if (!user) return null;
        const identity = (await store.listUserIdentities({ userId: user.id }))[0];
        return { username: user.username, name: identity?.name ?? null };
      },
    },
  });
  handler = (request, env) => app.fetch(request, env);

  let sweepStopped: Promise<void> | undefined;
  const sweeper = periodicSweep(authorizationServer.sweep, SWEEP_INTERVAL_MS, (error) =>
    log?.(auditRecord({ event: 'sweep_failed', message: (error as Error).message }, Date.now())),
  );

  // Listening for a stop before saying so: a stop sent as soon as the banner is read must drain too.
  const stopped = new Promise<void>((resolve) => {
    // A stop answers the requests it began, and only then closes the store. One cut off after
    // its refresh token rotated would lose the new token, and the client's retry with the old one
    // would then revoke the whole grant as a reuse: every restart or deploy would sign out the
    // people whose refresh was in flight. So: no new connections; idle ones closed as they go idle
    // (a request on one was never begun, and its client can retry); busy ones left to finish, for
    // up to DRAIN_MS.
    const stop = (signal: NodeJS.Signals) => {
      print(`Stopping (${signal}): no new connections; finishing the requests in flight, for up to ${DRAIN_MS / 1000} s…`);
      stopping = true;
      sweepStopped = sweeper.stop();
      const connections = server as unknown as Connections;
      const idle = setInterval(() => connections.closeIdleConnections?.(), DRAIN_POLL_MS);
      const deadline = setTimeout(() => connections.closeAllConnections?.(), DRAIN_MS);
      server.close(() => {
        clearInterval(idle);
        clearTimeout(deadline);
        resolve();
      });
      connections.closeIdleConnections?.();
    };
    onStopSignal(stop);
  });
  // Every password sign-in fails on a store nobody was added to: say so, with the command that adds someone.
  if (upstream?.localUsers !== false && (await store.listUsers()).length === 0) process.stderr.write(`${noUsersNote(values)}\n`);
  print(`context-auth serve
  issuer        ${issuer}
  metadata      ${wellKnownUrl(issuer, 'oauth-authorization-server')}${pagesBanner(authorizationServer.pages)}
  mcp server    ${defaultResource}   (the demo)
  resource md   ${protectedResourceMetadataUrl(defaultResource)}
${resourcesBanner(resources)}
  store         ${location}${created ? ' (new: an empty database was created here)' : ''}
  registration  ${typeof registration === 'string' ? registration : 'initial access token'}${allowedRedirectSchemes.length > 0 ? `\n  redirects     https, http on loopback, and apps' own ${allowedRedirectSchemes.map((scheme) => `${scheme}:`).join(' ')} (--allow-redirect-scheme)` : ''}
  rate limits   ${rateLimitBanner(rateLimits, rateLimits.shared ?? store.sharedByReplicas ?? false, trustProxy)}
  client docs   ${clientIdMetadataDocuments.enabled ? `${clientIdMetadataDocuments.allowHosts.length > 0 ? `from ${clientIdMetadataDocuments.allowHosts.join(', ')}` : 'accepted'}; ${clientDocumentLimitsBanner(rateLimits)}` : `off${documentsFlag === 'follow-registration' ? ' (as registration; --client-documents on accepts them)' : ''}`}
  heap limit    ${heapBanner()}${metrics ? `\n  metrics       ${issuer}/metrics   (${metrics === true ? 'this machine only' : 'with the --metrics-token'})` : ''}${upstreamBanner(upstream, issuer)}${jwtBearerBanner(jwtBearer)}
Listening on ${tls ? 'https' : 'http'}://${listenAddress(host, actualPort)} (Ctrl-C to stop)`);

  await stopped;
  // A sweep in progress stops after its batch in flight (told at the stop), before the store closes under it.
  await sweepStopped;
  await authorizationServer.revocations.stop();
  // The audit events still waiting are written while the store is open: a clean stop loses none.
  await authorizationServer.close();
  await store.close();
  stopReopening();
  auditFile?.close();
  print('Stopped.');
}

/** The --audit-log file, opened now so a path that cannot be written stops serve at start. */
function openAuditFile(path: string | undefined): AuditFile | null {
  if (path === undefined) return null;
  try {
    return new AuditFile(path, (message) => process.stderr.write(`warning: ${message}\n`));
  } catch (error) {
    throw new CliError(`Cannot open --audit-log ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`);
  }
}

/** `--metrics` and its token (the flag's, else the environment's), checked before anything starts. */
function metricsOption(on: boolean | undefined, token: string | undefined, fromFlag: boolean): true | { token: string } | undefined {
  const source = fromFlag ? '--metrics-token' : 'CONTEXT_AUTH_METRICS_TOKEN';
  if (token !== undefined && !on) throw usageError(`${source} goes with --metrics`);
  if (token !== undefined && token.length < 16) throw usageError(`${source} must be at least 16 characters`);
  if (!on) return undefined;
  return token === undefined ? true : { token };
}

/**
 * Reads and checks the TLS files before anything listens: a file that is not PEM, or a key that
 * does not belong to the certificate, is named here instead of surfacing as an OpenSSL code.
 */
function readTls(certPath: string, keyPath: string): { cert: Buffer; key: Buffer } {
  const read = (path: string, flag: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw new CliError(`Cannot read ${flag} ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  };
  const cert = read(certPath, '--tls-cert');
  const key = read(keyPath, '--tls-key');
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(cert);
  } catch {
    throw new CliError(`--tls-cert ${certPath} is not a valid PEM certificate (expected -----BEGIN CERTIFICATE-----).`);
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(key);
  } catch {
    throw new CliError(`--tls-key ${keyPath} is not a valid, unencrypted PEM private key (expected -----BEGIN PRIVATE KEY----- or similar).`);
  }
  if (!certificate.checkPrivateKey(privateKey)) throw new CliError(`--tls-key ${keyPath} is not the private key of the certificate in ${certPath}.`);
  return { cert, key };
}

/**
 * Every context server tokens may be issued for, one per line: a client naming any other
 * `resource` is refused with invalid_target, so an operator sees here whether theirs is missing.
 */
export function resourcesBanner(resources: string[]): string {
  const [demo, ...added] = resources;
  const lines = [`  resources     ${demo}   (the demo; the default when a request names none)`];
  for (const resource of added) lines.push(`                ${resource}   (--resource)`);
  if (added.length === 0) lines.push('                (to protect your own context server, add its URL: --resource http://127.0.0.1:3000/mcp)');
  return lines.join('\n');
}

/** What to run to add the first user, naming the same store as this `serve`. */
function noUsersNote(flags: { data?: string | undefined; store?: string | undefined }): string {
  const where = flags.store ? ' --store <the same URL>' : flags.data ? ` --data ${shellQuoted(flags.data)}` : '';
  return `No users yet: every password sign-in fails ("Wrong username or password") until you add one:\n  context-auth users add NAME${where}`;
}

/** V8's own heap limit, and whether serve sized it (serve-thread.ts) or node's flags did. */
function heapBanner(): string {
  const limit = `${Math.round(getHeapStatistics().heap_size_limit / 1024 / 1024)} MB`;
  return isMainThread ? `${limit} (as node was started)` : limit;
}

/** The pages for people, where the store has them. */
function pagesBanner({ account, admin }: { account: string | null; admin: string | null }): string {
  return `${account ? `\n  account       ${account}   (each person's approved applications, to revoke)` : ''}${admin ? `\n  admin         ${admin}   (the console, for administrators)` : ''}`;
}

/** Who may sign jwt-bearer grants, when anyone may. */
function jwtBearerBanner({ trustedIdps = [], workloads = [] }: { trustedIdps?: string[] | undefined; workloads?: unknown[] | undefined }): string {
  const lines = trustedIdps.map((idp) => `\n  trusted idp   ${idp}   (ID-JAGs)`);
  if (workloads.length > 0) lines.push(`\n  workloads     ${workloads.length} rule${workloads.length === 1 ? '' : 's'} (--workload-config)`);
  return lines.join('');
}

/** The providers (as the options name them, defaults as documented) and the callback URL the operator registers at each of them. */
function upstreamBanner(upstream: UpstreamOptions | undefined, issuer: string): string {
  if (!upstream || upstream.providers.length === 0) return '';
  const providers = upstream.providers.map((p) => `${p.name ?? p.id} (${p.id})`).join(', ');
  return `
  sign-in       ${providers}${upstream.localUsers !== false ? ', local passwords' : ''}
  callback      ${issuer}/upstream/callback   (register this redirect URI at each provider)`;
}
