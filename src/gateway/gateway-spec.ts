import type { Result } from '../core/index.js';

const fail = (defect: string): Result<GatewaySpec, string> => ({ ok: false, defect });

/** One upstream behind the gateway: the path it is published at, and where its requests go. */
export interface GatewaySpec {
  path: string;
  upstream: { kind: 'http'; url: string } | { kind: 'stdio'; command: string; args: string[] };
}

/**
 * The first path segments this origin already serves (the authorization server's endpoints and
 * pages, the demo at /mcp, the well-known documents): a gateway path there would be shadowed.
 */
const TAKEN = new Set([
  '.well-known',
  'mcp',
  'authorize',
  'token',
  'register',
  'revoke',
  'introspect',
  'jwks',
  'device_authorization',
  'device',
  'interaction',
  'upstream',
  'account',
  'admin',
  'healthz',
  'readyz',
  'metrics',
  'revocations',
]);

const SEGMENT = /^[A-Za-z0-9._~-]+$/;

/**
 * Whether `serve` answers `path` of its origin itself: under one of its own first segments, or at
 * one of `gatewayPaths` (or below it). An upstream there would be the gateway forwarding to itself.
 */
export function servedHere(path: string, gatewayPaths: readonly string[]): boolean {
  return TAKEN.has(path.split('/')[1] ?? '') || gatewayPaths.some((gateway) => path === gateway || path.startsWith(`${gateway}/`));
}

/**
 * `PATH=URL`, e.g. `/github=http://127.0.0.1:3000/mcp`, or `PATH=stdio:COMMAND ARGS…`, e.g.
 * `/files=stdio:npx -y @modelcontextprotocol/server-filesystem /srv` (split at spaces, no shell),
 * checked; the reason when it cannot be served.
 */
export function parseGatewaySpec(text: string): Result<GatewaySpec, string> {
  const equals = text.indexOf('=');
  if (equals < 0) return fail('must be PATH=URL, e.g. /github=http://127.0.0.1:3000/mcp');
  const path = text.slice(0, equals);
  const upstream = text.slice(equals + 1);
  const segments = path.split('/').slice(1);
  if (!path.startsWith('/') || segments.some((segment) => !SEGMENT.test(segment) || segment === '.' || segment === '..')) {
    return fail(`${path} must be a path such as /github (letters, digits, . _ ~ - between slashes)`);
  }
  if (TAKEN.has(segments[0]!)) return fail(`${path} is taken by this server's own ${segments[0]}`);
  if (upstream.startsWith('stdio:')) {
    const [command, ...args] = upstream
      .slice('stdio:'.length)
      .split(' ')
      .filter((word) => word !== '');
    if (command === undefined) return fail(`${path}=stdio: needs a command, e.g. stdio:npx -y @modelcontextprotocol/server-filesystem /srv`);
    return { ok: true, value: { path, upstream: { kind: 'stdio', command, args } } };
  }
  let url: URL;
  try {
    url = new URL(upstream);
  } catch {
    return fail(`${upstream} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return fail(`${upstream} must be an http or https URL`);
  if (url.username !== '' || url.password !== '') return fail(`${upstream} must not carry a user name or password`);
  if (url.hash !== '') return fail(`${upstream} must not have a fragment`);
  return { ok: true, value: { path, upstream: { kind: 'http', url: url.href } } };
}
