/** serve's gateway flags → the gateway paths of serve's app, each checked before anything starts. */
import { readFileSync } from 'node:fs';
import { canonicalizeResourceUri } from '../core/index.js';
import { isLoopbackHost } from '../cli-support.js';
import { StdioUpstream, httpUpstream, parseGatewaySpec, parseToolPolicies, servedHere, type GatewaySpec, type ToolPolicy } from '../gateway/index.js';
import type { CoHostedGateway } from './co-hosted-app.js';
import { usageError } from './errors.js';

export const GATEWAY_HELP = `  --gateway PATH=URL       publish the Streamable HTTP context server at URL as <issuer>PATH, protected as a
                           resource of its own (its own audience), and forward valid requests to it; e.g.
                           /github=http://127.0.0.1:3000/mcp (repeatable). URL never gets the person's token
  --gateway PATH=stdio:COMMAND ARGS
                           the same for a stdio context server: one COMMAND process per MCP session (split at
                           spaces, no shell), ended with its session
  --gateway-timeout S      answer 504 when an upstream takes longer to begin its answer (default 30)
  --gateway-token MODE     what an HTTP upstream gets in Authorization: none (default) | signed (a token this
                           server signs for the upstream's URL as audience, with the person's sub, client_id and
                           scope, living 5 minutes at most, verifiable with <issuer>/jwks)
  --gateway-max-sessions N stdio processes running at once, per path (default 20); past it, 503
  --gateway-idle-timeout S end a stdio session, and its process, after this long without a request (default 600)
  --gateway-env NAME       pass this variable of serve's environment to the stdio processes (repeatable); they
                           get only PATH, HOME and a few such basics besides
  --gateway-policy FILE    scopes per tool, resource and prompt of each path, as JSON; a call the token's scopes
                           do not cover is 403 insufficient_scope, naming the scopes to step up to (docs/gateway.md)
  --gateway-audit-arguments
                           put each tools/call's arguments (as JSON, cut to 2000 characters) in its audit event;
                           without it, events name the tool and never carry its arguments`;

export const GATEWAY_OPTIONS = {
  gateway: { type: 'string', multiple: true },
  'gateway-timeout': { type: 'string' },
  'gateway-token': { type: 'string' },
  'gateway-max-sessions': { type: 'string' },
  'gateway-idle-timeout': { type: 'string' },
  'gateway-env': { type: 'string', multiple: true },
  'gateway-policy': { type: 'string' },
  'gateway-audit-arguments': { type: 'boolean' },
} as const;

export interface GatewayFlags {
  gateway?: string[] | undefined;
  'gateway-timeout'?: string | undefined;
  'gateway-token'?: string | undefined;
  'gateway-max-sessions'?: string | undefined;
  'gateway-idle-timeout'?: string | undefined;
  'gateway-env'?: string[] | undefined;
  'gateway-policy'?: string | undefined;
  'gateway-audit-arguments'?: boolean | undefined;
}

/** The gateway paths, checked; nothing runs until a request comes. `close` ends the stdio processes and the connections kept to HTTP upstreams. */
export interface GatewaySettings {
  gateways: CoHostedGateway[];
  /** Each path's upstream state, for /readyz (reported, never failing it). */
  readiness(): Promise<Record<string, string>>;
  close(): Promise<void>;
}

/** Where serve answers: its --issuer (when given) and its listen address, so that a gateway to itself is refused. */
export interface ServeAddress {
  issuer: string | undefined;
  host: string;
  port: number;
}

const SETTINGS = [
  'gateway-timeout',
  'gateway-token',
  'gateway-max-sessions',
  'gateway-idle-timeout',
  'gateway-env',
  'gateway-policy',
  'gateway-audit-arguments',
] as const;

function whole(flag: string, value: string | undefined, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1 || parsed > max) throw usageError(`--${flag} must be a whole number from 1 to ${max}`);
  return parsed;
}

/** `issuedScopes`: the scopes this server issues, which a policy may name. */
export function gatewayOptions(
  values: GatewayFlags,
  issuedScopes: readonly string[],
  here: ServeAddress,
  environment: NodeJS.ProcessEnv = process.env,
): GatewaySettings {
  const specs = (values.gateway ?? []).map((text) => {
    const parsed = parseGatewaySpec(text);
    if (!parsed.ok) throw usageError(`--gateway ${parsed.defect}`);
    return parsed.value;
  });
  if (specs.length === 0) {
    for (const flag of SETTINGS) if (values[flag] !== undefined) throw usageError(`--${flag} goes with --gateway`);
    return { gateways: [], readiness: async () => ({}), close: async () => {} };
  }
  const paths = new Set<string>();
  for (const { path } of specs) {
    if (paths.has(path)) throw usageError(`--gateway ${path} is given twice`);
    paths.add(path);
  }
  for (const { path, upstream } of specs) {
    if (upstream.kind === 'http' && loopsBack(new URL(upstream.url), here, [...paths])) {
      throw usageError(`--gateway ${path}=${upstream.url} is this server itself: its requests would come back to it without end`);
    }
  }
  const timeoutMs = whole('gateway-timeout', values['gateway-timeout'], 30, 600) * 1000;
  const mode = values['gateway-token'] ?? 'none';
  if (mode !== 'none' && mode !== 'signed') throw usageError('--gateway-token must be none or signed');
  const maxSessions = whole('gateway-max-sessions', values['gateway-max-sessions'], 20, 10_000);
  const idleMs = whole('gateway-idle-timeout', values['gateway-idle-timeout'], 600, 7 * 24 * 3600) * 1000;
  const env: Record<string, string> = {};
  for (const name of values['gateway-env'] ?? []) {
    const value = environment[name];
    if (value === undefined) throw usageError(`--gateway-env ${name} is not set in serve's environment`);
    env[name] = value;
  }
  const policies = policyFile(values['gateway-policy'], [...paths], issuedScopes);
  const auditArguments = values['gateway-audit-arguments'] ?? false;
  const gateways = specs.map(({ path, upstream }: GatewaySpec): CoHostedGateway => {
    const policy = policies.get(path);
    const common = { path, auditArguments, ...(policy ? { policy } : {}) };
    if (upstream.kind === 'http') {
      return {
        ...common,
        upstream: httpUpstream(upstream.url, { timeoutMs }),
        ...(mode === 'signed' ? { upstreamTokenAudience: canonicalizeResourceUri(upstream.url) } : {}),
      };
    }
    return {
      ...common,
      upstream: new StdioUpstream({
        command: upstream.command,
        args: upstream.args,
        env,
        maxSessions,
        idleMs,
        // serve's log, apart from the audit lines: said whatever --quiet says, as warnings are.
        stderr: (line, pid) => process.stderr.write(`[gateway ${path}${pid === null ? '' : ` pid ${pid}`}] ${line}\n`),
      }),
    };
  });
  return {
    gateways,
    readiness: async () =>
      Object.fromEntries(await Promise.all(gateways.map(async ({ path, upstream }) => [path, (await upstream.health?.()) ?? 'unknown'] as const))),
    close: async () => void (await Promise.all(gateways.map(({ upstream }) => upstream.close?.()))),
  };
}

/**
 * Whether `url` is this server: the origin of its issuer, or its listen address (a loopback name
 * for a loopback or wildcard one), at a path it answers itself (gateway/gateway-spec.ts). Loopback names
 * are one host: http://localhost:8080 is http://127.0.0.1:8080.
 */
function loopsBack(url: URL, here: ServeAddress, gatewayPaths: string[]): boolean {
  const port = (target: URL) => target.port || (target.protocol === 'https:' ? '443' : '80');
  const sameHost = (a: string, b: string) => a.toLowerCase() === b.toLowerCase() || (isLoopbackHost(a) && isLoopbackHost(b));
  const paths = [url.pathname];
  let reaches = false;
  if (here.issuer !== undefined) {
    const issuer = new URL(here.issuer);
    const base = issuer.pathname.replace(/\/+$/, '');
    if (base !== '' && url.pathname.startsWith(`${base}/`)) paths.push(url.pathname.slice(base.length));
    reaches = url.protocol === issuer.protocol && port(url) === port(issuer) && sameHost(url.hostname, issuer.hostname);
  }
  // Port 0 is picked at start: no upstream given before can name it.
  const wildcard = ['0.0.0.0', '::', '[::]'].includes(here.host);
  const listenHost = here.host.includes(':') && !here.host.startsWith('[') ? `[${here.host}]` : here.host;
  if (here.port !== 0 && port(url) === String(here.port) && (sameHost(url.hostname, listenHost) || (wildcard && isLoopbackHost(url.hostname)))) reaches = true;
  return reaches && paths.some((path) => servedHere(path, gatewayPaths));
}

/** --gateway-policy, read and checked before anything starts. */
function policyFile(file: string | undefined, paths: string[], scopes: readonly string[]): Map<string, ToolPolicy> {
  if (file === undefined) return new Map();
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    const reason = error instanceof SyntaxError ? 'is not JSON' : `cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`;
    throw usageError(`--gateway-policy ${file} ${reason}`);
  }
  const parsed = parseToolPolicies(json, { paths, scopes });
  if (!parsed.ok) throw usageError(`--gateway-policy ${file} ${parsed.defect}`);
  return parsed.value;
}
