import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  LISTEN_DEFAULTS,
  StartError,
  startAuthorizationServer,
  type AuditRecord,
  type ClientAssertionAudience,
  type RunningAuthorizationServer,
  type StartAuthorizationServerOptions,
} from '../authorization-server/index.js';
import type { FullStore } from '../store/index.js';
import { canonicalizeResourceUri, normalizeIssuer } from '../core/index.js';
import { isLoopbackHost, printableJson, privateUseSchemeProblem } from '../cli-support.js';
import { parseArgs } from 'node:util';
import { COMMON_OPTIONS, STORE_OPTIONS, parsed, print } from './args.js';
import { coHostedApp } from './co-hosted-app.js';
import { dataFolder, openStore } from './data.js';
import { loadSecretBox } from './secret-key.js';
import { UPSTREAM_HELP, UPSTREAM_OPTIONS, upstreamOptions, wantsUpstream } from './upstream-options.js';
import { GATEWAY_HELP, GATEWAY_OPTIONS, gatewayOptions, type GatewaySettings } from './gateway-options.js';
import type { CoHostedGateway } from './co-hosted-app.js';
import { JWT_BEARER_HELP, JWT_BEARER_OPTIONS, jwtBearerOptions } from './jwt-bearer-options.js';
import { TOKEN_EXCHANGE_HELP, TOKEN_EXCHANGE_OPTIONS, tokenExchangeOptions } from './token-exchange-options.js';
import { CliError, usageError } from './errors.js';
import { onStopSignal } from './stop-signal.js';
import { onReopenSignal } from './reopen-signal.js';
import { AuditFile } from './audit-file.js';
import { stderrLines } from './stderr-lines.js';
import { noUsersNote, serveBanner } from './serve-banner.js';
import { RATE_LIMIT_HELP, rateLimitOptions, trustProxyOption } from './rate-limit-options.js';

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
${JWT_BEARER_HELP}
Token exchange (RFC 8693): a context server calling another on a person's behalf:
${TOKEN_EXCHANGE_HELP}
A gateway in front of context servers in any language (docs/gateway.md):
${GATEWAY_HELP}`;

/** How long a stop (SIGTERM, Ctrl-C) lets the requests in flight finish before it cuts them off. */
const DRAIN_MS = LISTEN_DEFAULTS.drainMs;

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

function clientAssertionAudienceOption(mode: string | undefined): ClientAssertionAudience {
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
  ...TOKEN_EXCHANGE_OPTIONS,
  ...GATEWAY_OPTIONS,
} as const;

type ServeFlags = ReturnType<typeof parseServeArgs>['values'];
type OpenedStore = Awaited<ReturnType<typeof openStore>>;

function parseServeArgs(args: string[]) {
  return parsed(() => parseArgs({ args, options: SERVE_OPTIONS, allowPositionals: true, strict: true }));
}

/** What serve starts, from its flags: every flag checked, nothing opened yet. */
interface ServeSettings {
  /** The server's options, but the store, the log and the app. */
  server: Omit<StartAuthorizationServerOptions, 'store' | 'log' | 'app' | 'resources'> & { listen: { host: string; port: number } };
  /** The demo's URL first (the default resource), then each --resource. */
  resources: (issuer: string) => string[];
  /** --client-documents as given, for the banner. */
  documentsFlag: string;
  /** The --gateway paths, each a resource of its own. */
  gateways: GatewaySettings;
}

function serveSettings(values: ServeFlags): ServeSettings {
  const host = values.host ?? LISTEN_DEFAULTS.host;
  const port = integer('port', values.port, LISTEN_DEFAULTS.port, 0, 65535);
  const accessTokenTtl = integer('access-token-ttl', values['access-token-ttl'], 600, 30, 86400);
  const headerTimeoutMs = integer('header-timeout', values['header-timeout'], LISTEN_DEFAULTS.headerTimeoutMs / 1000, 1, 60) * 1000;
  const maxConnections = integer('max-connections', values['max-connections'], LISTEN_DEFAULTS.maxConnections, 1, 100_000);
  const perAddress = values['max-connections-per-address'];
  // Absent, the library's default: a share of --max-connections.
  const maxConnectionsPerAddress = perAddress === undefined ? undefined : integer('max-connections-per-address', perAddress, 0, 0, 100_000);
  const registration = registrationPolicy(values.registration);
  const clientAssertionAudience = clientAssertionAudienceOption(values['client-assertion-audience']);
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
  const issuer = issuerOption(values.issuer);
  const addedResources = resourcesOption(values.resource);

  // Upstream sign-in is read before anything starts, so a bad flag stops us with nothing open.
  const sharedStore = Boolean(values.store ?? process.env.CONTEXT_AUTH_STORE);
  const upstream = wantsUpstream(values)
    ? upstreamOptions(values, () => loadSecretBox({ dataFolder: sharedStore ? null : dataFolder(values.data) }).box)
    : undefined;
  if (!upstream && values['local-users'] === 'off') throw usageError('--local-users off needs at least one --upstream-issuer or --upstream-config');
  const jwtBearer = jwtBearerOptions(values, ['mcp:tools', 'mcp:admin']);
  const tokenExchange = tokenExchangeOptions(values, ['mcp:tools', 'mcp:admin']);
  const gateways = gatewayOptions(values, ['mcp:tools', 'mcp:admin'], { issuer, host, port });

  return {
    server: {
      ...(issuer ? { issuer } : {}),
      listen: {
        host,
        port,
        ...(tls ? { tls } : {}),
        headerTimeoutMs,
        maxConnections,
        drainMs: DRAIN_MS,
        ...(maxConnectionsPerAddress === undefined ? {} : { maxConnectionsPerAddress }),
      },
      registration,
      registrationTtl,
      allowedRedirectSchemes,
      accessTokenTtl,
      clientIdMetadataDocuments,
      clientAssertionAudience,
      trustProxy,
      rateLimits,
      ...(upstream ? { upstream } : {}),
      ...jwtBearer,
      ...tokenExchange,
      ...(values['dpop-nonce'] ? { dpop: { nonce: true } } : {}),
      ...(metrics ? { metrics } : {}),
      auditEvents: { retentionDays: auditRetentionDays },
      admin,
      ...(gateways.gateways.length > 0 ? { readinessReports: { upstreams: gateways.readiness } } : {}),
    },
    resources: (issuer) => [...new Set([`${issuer}/mcp`, ...addedResources, ...gateways.gateways.map((gateway) => `${issuer}${gateway.path}`)])],
    documentsFlag,
    gateways,
  };
}

export async function serveCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseServeArgs(args);
  if (values.help) return print(SERVE_HELP);
  if (positionals.length > 0) throw usageError(`unexpected argument ${positionals[0]}`);
  const settings = serveSettings(values);

  const auditFile = openAuditFile(values['audit-log']);
  const stderr = stderrLines();
  // Quiet and without a file, no line is made: the store's writer takes the record as it is.
  const log =
    values.quiet && !auditFile
      ? undefined
      : (record: AuditRecord) => {
          const line = `${printableJson(record)}\n`;
          if (!values.quiet) stderr.write(line);
          auditFile?.write(line);
        };
  let opened: OpenedStore;
  let running: RunningAuthorizationServer;
  try {
    opened = await openStore(values, { create: true });
    // The server owns the store from here: it closes it at the stop, or when the start fails.
    running = await startAuthorizationServer({
      ...settings.server,
      store: opened.store,
      resources: settings.resources,
      ...(log ? { log } : {}),
      app: demoApp(opened.store, settings.server.upstream !== undefined, settings.gateways.gateways),
    });
  } catch (error) {
    auditFile?.close();
    await settings.gateways.close();
    throw startFailure(error, settings.server.listen);
  }
  const stopReopening = auditFile ? onReopenSignal(() => auditFile.reopen()) : () => {};
  // Listening for a stop before saying so: a stop sent as soon as the banner is read must drain too.
  const stopped = new Promise<NodeJS.Signals>((resolve) => onStopSignal(resolve));
  // Every password sign-in fails on a store nobody was added to: say so, with the command that adds someone.
  if (settings.server.upstream?.localUsers !== false && (await opened.store.listUsers()).length === 0) process.stderr.write(`${noUsersNote(values)}\n`);
  print(serveBanner(running, settings, opened));

  const signal = await stopped;
  print(`Stopping (${signal}): no new connections; finishing the requests in flight, for up to ${DRAIN_MS / 1000} s…`);
  try {
    await running.close();
  } finally {
    // After the drain: the stdio processes answered the requests in flight.
    await settings.gateways.close();
    stopReopening();
    auditFile?.close();
  }
  print('Stopped.');
}

/**
 * What serve serves: the authorization server, the demo MCP server at <issuer>/mcp, which greets
 * the person by name, and the --gateway paths.
 */
function demoApp(store: FullStore, withUpstream: boolean, gateways: CoHostedGateway[]): StartAuthorizationServerOptions['app'] {
  return (server) =>
    coHostedApp(server, {
      resource: `${server.metadata.issuer}/mcp`,
      gateways,
      demo: {
        upstream: withUpstream ? (auth) => server.upstreamAccess(auth.claims) : undefined,
        user: async (subject) => {
          const user = await store.getUser({ id: subject });
          if (!user) return null;
          const identity = (await store.listUserIdentities({ userId: user.id }))[0];
          return { username: user.username, name: identity?.name ?? null };
        },
      },
    });
}

/** --issuer, checked before anything opens. */
function issuerOption(issuer: string | undefined): string | undefined {
  if (issuer === undefined) return undefined;
  try {
    return normalizeIssuer(issuer);
  } catch (error) {
    throw new CliError(`Invalid --issuer: ${(error as Error).message}.`);
  }
}

/** The --resource URLs, canonical, checked before anything opens. */
function resourcesOption(resources: string[] | undefined): string[] {
  try {
    return (resources ?? []).map((resource) => canonicalizeResourceUri(resource));
  } catch {
    throw new CliError('Every --resource must be an absolute http(s) URL without a fragment.');
  }
}

/** A failed start in the flags' words: the listen address, the workload rules; anything else as it came. */
function startFailure(error: unknown, { host, port }: { host: string; port: number }): unknown {
  if (!(error instanceof StartError)) return error;
  const cause = error.cause as NodeJS.ErrnoException;
  if (error.step === 'listen') {
    if (cause.code === 'EADDRINUSE') return new CliError(`Port ${port} on ${host} is in use; choose another with --port.`);
    if (cause.code === 'EACCES') return new CliError(`Not allowed to listen on ${listenAddress(host, port)}; choose a port above 1023.`);
    return new CliError(`Cannot listen on ${listenAddress(host, port)}: ${cause.message}`);
  }
  if (error.step === 'workload-clients') return new CliError(`--workload-config: ${cause.message}.`);
  return cause;
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
