/** What `serve` says at start: the banner, once it listens, and the note when no one can sign in yet. */
import { getHeapStatistics } from 'node:v8';
import { isMainThread } from 'node:worker_threads';
import type { RunningAuthorizationServer, StartAuthorizationServerOptions, TokenExchangeOptions, UpstreamOptions } from '../authorization-server/index.js';
import { wellKnownUrl } from '../core/index.js';
import { protectedResourceMetadataUrl } from '../resource-server/index.js';
import { shellQuoted } from './args.js';
import { clientDocumentLimitsBanner, rateLimitBanner } from './rate-limit-options.js';

/** What the banner shows of serve's settings. */
export interface BannerSettings {
  server: Pick<
    StartAuthorizationServerOptions,
    | 'registration'
    | 'allowedRedirectSchemes'
    | 'rateLimits'
    | 'trustProxy'
    | 'metrics'
    | 'upstream'
    | 'clientIdMetadataDocuments'
    | 'trustedIdps'
    | 'workloads'
    | 'tokenExchange'
  >;
  resources: (issuer: string) => string[];
  /** --client-documents as given. */
  documentsFlag: string;
}

/** Where the store is, whether serve made it, and whether replicas share it. */
export interface BannerStore {
  store: { sharedByReplicas?: boolean };
  location: string;
  created: boolean;
}

/** What serve says once it listens. */
export function serveBanner(
  running: RunningAuthorizationServer,
  { server: options, resources, documentsFlag }: BannerSettings,
  { store, location, created }: BannerStore,
): string {
  const { issuer } = running.metadata;
  const demo = `${issuer}/mcp`;
  const { registration, allowedRedirectSchemes = [], rateLimits = {}, trustProxy = [], metrics, upstream } = options;
  const documents = options.clientIdMetadataDocuments ?? {};
  const hosts = documents.allowHosts ?? [];
  return `context-auth serve
  issuer        ${issuer}
  metadata      ${wellKnownUrl(issuer, 'oauth-authorization-server')}${pagesBanner(running.pages)}
  mcp server    ${demo}   (the demo)
  resource md   ${protectedResourceMetadataUrl(demo)}
${resourcesBanner(resources(issuer))}
  store         ${location}${created ? ' (new: an empty database was created here)' : ''}
  registration  ${typeof registration === 'object' ? 'initial access token' : (registration ?? 'open')}${allowedRedirectSchemes.length > 0 ? `\n  redirects     https, http on loopback, and apps' own ${allowedRedirectSchemes.map((scheme) => `${scheme}:`).join(' ')} (--allow-redirect-scheme)` : ''}
  rate limits   ${rateLimitBanner(rateLimits, rateLimits.shared ?? store.sharedByReplicas ?? false, trustProxy)}
  client docs   ${documents.enabled ? `${hosts.length > 0 ? `from ${hosts.join(', ')}` : 'accepted'}; ${clientDocumentLimitsBanner(rateLimits)}` : `off${documentsFlag === 'follow-registration' ? ' (as registration; --client-documents on accepts them)' : ''}`}
  heap limit    ${heapBanner()}${metrics ? `\n  metrics       ${issuer}/metrics   (${metrics === true ? 'this machine only' : 'with the --metrics-token'})` : ''}${upstreamBanner(upstream, issuer)}${jwtBearerBanner(options)}${tokenExchangeBanner(options.tokenExchange)}
Listening on ${running.url} (Ctrl-C to stop)`;
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
export function noUsersNote(flags: { data?: string | undefined; store?: string | undefined }): string {
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

/** What token exchange issues, when it issues anything: ID-JAGs for whom, delegations by how many rules. */
function tokenExchangeBanner(settings: TokenExchangeOptions | undefined): string {
  const lines = (settings?.idJagAudiences ?? []).map((audience) => `\n  id-jag for    ${audience.issuer}   (ID-JAGs issued, as the identity provider)`);
  const rules = settings?.delegations?.length ?? 0;
  if (rules > 0) lines.push(`\n  delegations   ${rules} rule${rules === 1 ? '' : 's'} (--delegation-config)`);
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
