/**
 * serve's upstream flags → the authorization server's upstream options. One provider comes from
 * --upstream-issuer and its --upstream-client-id (repeat the pair, in order, for several);
 * https://github.com selects the GitHub preset (GitHub is not an OpenID provider); a JSON file
 * (--upstream-config) describes any provider, plain OAuth 2.0 ones with their endpoints included.
 */
import { readFileSync } from 'node:fs';
import {
  checkUpstreamProviders,
  githubProvider,
  type UpstreamIdentity,
  type UpstreamOptions,
  type UpstreamProviderOptions,
} from '../authorization-server/index.js';
import type { SecretBox } from '../core/index.js';
import { CliError, usageError } from './errors.js';

export const UPSTREAM_HELP = `  --upstream-issuer URL    sign in through this OpenID provider (https://github.com: GitHub); repeatable
  --upstream-client-id ID  our client id at that provider (one per --upstream-issuer, in order)
  --upstream-client-secret S  its secret (or $CONTEXT_AUTH_UPSTREAM_CLIENT_SECRET with one provider)
  --upstream-scope "…"     scopes to ask of it (default "openid email profile"; GitHub "read:user user:email")
  --upstream-name LABEL    the sign-in button's label (default from the issuer)
  --upstream-config FILE   providers as JSON, for several or for plain OAuth 2.0 providers (docs/identity-providers.md)
  --local-users on|off     offer local passwords too (default on)
  --upstream-session-ttl S seconds one upstream sign-in carries a grant (default 86400)
  --upstream-allow-domain D  only people with a verified email at D may sign in (repeatable)
  --upstream-allow-email E   only these verified emails may sign in (repeatable)
  --upstream-require-claim NAME=VALUE  only people the provider asserts this claim of, e.g. tid=<Entra
                             tenant id> or hd=<Google Workspace domain> (repeatable; one name repeated: any value)
  --allow-insecure-upstream  allow http:// providers on this machine (tests and local development only)`;

export const UPSTREAM_OPTIONS = {
  'upstream-issuer': { type: 'string', multiple: true },
  'upstream-client-id': { type: 'string', multiple: true },
  'upstream-client-secret': { type: 'string', multiple: true },
  'upstream-scope': { type: 'string', multiple: true },
  'upstream-name': { type: 'string', multiple: true },
  'upstream-config': { type: 'string' },
  'local-users': { type: 'string' },
  'upstream-session-ttl': { type: 'string' },
  'upstream-allow-domain': { type: 'string', multiple: true },
  'upstream-allow-email': { type: 'string', multiple: true },
  'upstream-require-claim': { type: 'string', multiple: true },
  'allow-insecure-upstream': { type: 'boolean' },
} as const;

export interface UpstreamFlags {
  'upstream-issuer'?: string[] | undefined;
  'upstream-client-id'?: string[] | undefined;
  'upstream-client-secret'?: string[] | undefined;
  'upstream-scope'?: string[] | undefined;
  'upstream-name'?: string[] | undefined;
  'upstream-config'?: string | undefined;
  'local-users'?: string | undefined;
  'upstream-session-ttl'?: string | undefined;
  'upstream-allow-domain'?: string[] | undefined;
  'upstream-allow-email'?: string[] | undefined;
  'upstream-require-claim'?: string[] | undefined;
  'allow-insecure-upstream'?: boolean | undefined;
}

/** Providers whose issuer host we know: a short id and the name on the button. */
const KNOWN: Record<string, { id: string; name: string }> = {
  'accounts.google.com': { id: 'google', name: 'Google' },
  'login.microsoftonline.com': { id: 'microsoft', name: 'Microsoft' },
  'github.com': { id: 'github', name: 'GitHub' },
};

/** Whether any upstream provider was asked for (then a secret key is needed). */
export function wantsUpstream(flags: UpstreamFlags): boolean {
  return (flags['upstream-issuer']?.length ?? 0) > 0 || flags['upstream-config'] !== undefined;
}

/** `secretBox` is called once the flags are known to be right, so a mistake creates no key file. */
export function upstreamOptions(flags: UpstreamFlags, secretBox: () => SecretBox, env: NodeJS.ProcessEnv = process.env): UpstreamOptions {
  const providers = [...providersFromFlags(flags, env), ...(flags['upstream-config'] ? providersFromFile(flags['upstream-config'], env) : [])];
  const localUsers = flags['local-users'] ?? 'on';
  if (localUsers !== 'on' && localUsers !== 'off') throw usageError('--local-users must be on or off');
  const ttl = flags['upstream-session-ttl'];
  const sessionTtl = ttl === undefined ? undefined : Number(ttl);
  if (sessionTtl !== undefined && (!Number.isInteger(sessionTtl) || sessionTtl < 60)) {
    throw usageError('--upstream-session-ttl must be a whole number of seconds, at least 60');
  }
  const ids = new Set<string>();
  for (const provider of providers) {
    if (ids.has(provider.id)) throw usageError(`two upstream providers would be named ${provider.id}; give one an "id" in --upstream-config`);
    ids.add(provider.id);
  }
  const allowLoopbackHttp = flags['allow-insecure-upstream'] ?? false;
  // A setting that can never work stops serve here, before anything starts.
  try {
    checkUpstreamProviders(providers, { allowLoopbackHttp, setting: '--allow-insecure-upstream' });
  } catch (error) {
    throw new CliError(`${(error as Error).message}.`);
  }
  const requireClaims = claimRules(flags['upstream-require-claim'] ?? []);
  return {
    providers,
    secretBox: secretBox(),
    localUsers: localUsers === 'on',
    ...(sessionTtl !== undefined ? { sessionTtl } : {}),
    policy: { allowDomains: flags['upstream-allow-domain'] ?? [], allowEmails: flags['upstream-allow-email'] ?? [], requireClaims },
    allowLoopbackHttp,
  };
}

/** NAME=VALUE rules; one name given several times allows any of its values. */
function claimRules(rules: string[]): Record<string, string[]> {
  const claims: Record<string, string[]> = {};
  for (const rule of rules) {
    const eq = rule.indexOf('=');
    if (eq <= 0 || eq === rule.length - 1) throw usageError(`--upstream-require-claim ${rule} must be NAME=VALUE, e.g. tid=<tenant id> or hd=example.com`);
    (claims[rule.slice(0, eq)] ??= []).push(rule.slice(eq + 1));
  }
  return claims;
}

function providersFromFlags(flags: UpstreamFlags, env: NodeJS.ProcessEnv): UpstreamProviderOptions[] {
  const issuers = flags['upstream-issuer'] ?? [];
  const clientIds = flags['upstream-client-id'] ?? [];
  const secrets =
    flags['upstream-client-secret'] ?? (issuers.length === 1 && env.CONTEXT_AUTH_UPSTREAM_CLIENT_SECRET ? [env.CONTEXT_AUTH_UPSTREAM_CLIENT_SECRET] : []);
  const scopes = flags['upstream-scope'] ?? [];
  const names = flags['upstream-name'] ?? [];
  if (clientIds.length !== issuers.length) throw usageError('give one --upstream-client-id for each --upstream-issuer, in the same order');
  for (const [list, flag] of [
    [secrets, 'client-secret'],
    [scopes, 'scope'],
    [names, 'name'],
  ] as const) {
    if (list.length > 0 && list.length !== issuers.length) throw usageError(`give --upstream-${flag} for every --upstream-issuer, or for none`);
  }
  return issuers.map((issuer, i): UpstreamProviderOptions => {
    let host: string;
    try {
      host = new URL(issuer).hostname;
    } catch {
      throw usageError(`--upstream-issuer ${issuer} is not a URL`);
    }
    const derivedId = host
      .replace(/^(www|accounts|login|auth|id|sso)\./, '')
      .split('.')[0]!
      .toLowerCase()
      .replace(/[^a-z0-9-]/g, '-')
      .slice(0, 32);
    const known = KNOWN[host] ?? { id: derivedId || 'upstream', name: host };
    const name = names[i] ?? known.name;
    const clientSecret = secrets[i];
    const scope = scopes[i] ? { scope: scopes[i] } : {};
    if (known.id === 'github') {
      if (!clientSecret) throw new CliError('GitHub needs --upstream-client-secret (or $CONTEXT_AUTH_UPSTREAM_CLIENT_SECRET).');
      return githubProvider({ clientId: clientIds[i]!, clientSecret, name, ...scope });
    }
    return { kind: 'oidc', id: known.id, name, issuer, clientId: clientIds[i]!, ...(clientSecret ? { clientSecret } : {}), ...scope };
  });
}

/**
 * A JSON array of providers. OpenID: {"kind":"oidc","id","name","issuer","clientId","clientSecret","scope"}.
 * Plain OAuth 2.0: "kind":"oauth2" with "authorizationEndpoint", "tokenEndpoint",
 * "userinfoEndpoint" and a "profile" naming the user-info fields
 * ({"subject":"id","email":"email","name":"name","username":"login"}), and optionally a GitHub-style
 * "emailsEndpoint" listing verified addresses. {"preset":"github",…} is
 * GitHub. "clientSecretEnv" names an environment variable holding the secret, to keep it out of the file.
 */
function providersFromFile(file: string, env: NodeJS.ProcessEnv): UpstreamProviderOptions[] {
  let entries: unknown;
  try {
    entries = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new CliError(`Cannot read --upstream-config ${file}: ${(error as Error).message}`);
  }
  if (!Array.isArray(entries)) throw new CliError(`--upstream-config ${file} must hold a JSON array of providers`);
  return entries.map((entry, index) => providerFromJson(entry, `${file}, provider ${index + 1}`, env));
}

function providerFromJson(entry: unknown, where: string, env: NodeJS.ProcessEnv): UpstreamProviderOptions {
  if (typeof entry !== 'object' || entry === null) throw new CliError(`${where}: not an object`);
  const e = entry as Record<string, unknown>;
  const text = (key: string): string => {
    const value = e[key];
    if (typeof value !== 'string' || value === '') throw new CliError(`${where}: "${key}" must be a non-empty string`);
    return value;
  };
  const optional = (key: string): string | undefined => (e[key] === undefined ? undefined : text(key));
  const secretEnv = optional('clientSecretEnv');
  const clientSecret = secretEnv ? env[secretEnv] : optional('clientSecret');
  if (secretEnv && !clientSecret) throw new CliError(`${where}: $${secretEnv} is not set`);
  const scope = optional('scope');
  const common = { clientId: text('clientId'), ...(clientSecret ? { clientSecret } : {}), ...(scope ? { scope } : {}) };
  if (e.preset === 'github') {
    if (!clientSecret) throw new CliError(`${where}: GitHub needs a client secret`);
    const id = optional('id');
    const name = optional('name');
    return githubProvider({ ...common, clientSecret, ...(id ? { id } : {}), ...(name ? { name } : {}) });
  }
  const base = { id: text('id'), name: optional('name') ?? text('id'), issuer: text('issuer'), ...common };
  if (e.kind === 'oidc' || e.kind === undefined) return { kind: 'oidc', ...base };
  if (e.kind !== 'oauth2') throw new CliError(`${where}: "kind" must be oidc or oauth2`);
  const fields = (typeof e.profile === 'object' && e.profile !== null ? e.profile : {}) as Record<string, string>;
  return {
    kind: 'oauth2',
    ...base,
    authorizationEndpoint: text('authorizationEndpoint'),
    tokenEndpoint: text('tokenEndpoint'),
    userinfoEndpoint: text('userinfoEndpoint'),
    ...(optional('emailsEndpoint') ? { emailsEndpoint: text('emailsEndpoint') } : {}),
    profile: fieldMapping(fields, where),
  };
}

const PROFILE_DEFAULTS = { subject: 'sub', email: 'email', emailVerified: 'email_verified', name: 'name', username: 'preferred_username' };

/** A user-info mapping from field names, OpenID's by default. */
function fieldMapping(fields: Record<string, string>, where: string): (info: Record<string, unknown>) => Omit<UpstreamIdentity, 'issuer' | 'claims'> {
  const field = (key: keyof typeof PROFILE_DEFAULTS): string => fields[key] ?? PROFILE_DEFAULTS[key];
  const text = (info: Record<string, unknown>, key: keyof typeof PROFILE_DEFAULTS): string | null => {
    const value = info[field(key)];
    return typeof value === 'string' && value !== '' ? value : null;
  };
  return (info) => {
    const subject = info[field('subject')];
    if (typeof subject !== 'string' && typeof subject !== 'number') throw new Error(`${where}: the user-info has no "${field('subject')}"`);
    return {
      subject: String(subject),
      email: text(info, 'email'),
      emailVerified: info[field('emailVerified')] === true,
      name: text(info, 'name'),
      username: text(info, 'username'),
    };
  };
}
