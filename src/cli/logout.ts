import { parseArgs } from 'node:util';
import { ContextClient, type Revocation } from '../client/index.js';
import { describeIdentity } from '../cli-support.js';
import { COMMON_OPTIONS, isoTime, parsed, print } from './args.js';
import { CLIENT_OPTIONS, clientOptions } from './client-options.js';
import { CliError, usageError } from './errors.js';
import { identityFlags } from './identities.js';

export const LOGOUT_HELP = `context-auth logout URL [--grant-type TYPE --client-id ID] [--client-secret S] [--private-key FILE]
                       [--key-id KID] [--key-alg ALG] [--credentials FILE] [--quiet] [--json]
    revoke and forget the stored tokens of one identity for a context server: the person's, or with
    --grant-type client_credentials or jwt-bearer and --client-id, that program's. The refresh token
    is revoked, else (a program's grant has none) the access token, the client authenticating as at
    login (--client-secret, or --private-key FILE); logout says what the authorization server
    answered. A context server that follows its revocations (as serve's own does) then refuses the
    access token at once, any other until it expires.`;

/** Of the client options, those a logout uses: whose tokens, how its client authenticates, and where the tokens are. */
export const LOGOUT_OPTIONS = {
  ...COMMON_OPTIONS,
  'grant-type': CLIENT_OPTIONS['grant-type'],
  'client-id': CLIENT_OPTIONS['client-id'],
  'client-secret': CLIENT_OPTIONS['client-secret'],
  'private-key': CLIENT_OPTIONS['private-key'],
  'key-id': CLIENT_OPTIONS['key-id'],
  'key-alg': CLIENT_OPTIONS['key-alg'],
  credentials: CLIENT_OPTIONS.credentials,
  quiet: CLIENT_OPTIONS.quiet,
} as const;

const TOKEN_WORDS = { refresh_token: 'refresh token', access_token: 'access token' } as const;

/** Until when a context server that does not follow revocations accepts the access token. */
function until(revocation: Revocation): string {
  return revocation.accessTokenExpiresAt === undefined
    ? 'until it expires (the server stated no expiry)'
    : `until it expires at ${isoTime(revocation.accessTokenExpiresAt)}`;
}

/** One sentence on what became of one grant, saying only what the authorization server's answer shows. */
function describe(revocation: Revocation): string {
  const token = TOKEN_WORDS[revocation.token];
  switch (revocation.outcome) {
    case 'revoked':
      return `the ${token} was revoked at ${revocation.issuer}; a context server that follows its revocations (as serve's own does) refuses the access token at once, any other accepts it ${until(revocation)}`;
    case 'not_offered':
      return `${revocation.issuer} offers no revocation, so the tokens are only forgotten here; the access token stays valid ${until(revocation)}`;
    case 'not_sent':
      return `the ${token} was not sent for revocation (${revocation.reason}), only forgotten here; the access token stays valid ${until(revocation)}`;
    case 'failed':
      return `revoking the ${token} at ${revocation.issuer} failed: ${revocation.reason}; the tokens are only forgotten here, and the access token stays valid ${until(revocation)}`;
  }
}

export async function logoutCommand(args: string[]): Promise<void> {
  const { values, positionals } = parsed(() => parseArgs({ args, options: LOGOUT_OPTIONS, allowPositionals: true, strict: true }));
  if (values.help) return print(LOGOUT_HELP);
  const [url, ...rest] = positionals;
  if (!url) throw usageError('logout needs the context server URL');
  if (rest.length > 0) throw usageError(`unexpected argument ${rest[0]}`);
  const client = new ContextClient({ ...(await clientOptions(url, values, false)), interactive: false });
  const revocations = await client.logout();
  const who = describeIdentity(client.identity);
  if (revocations.length === 0) {
    const stored = (await client.store.listGrants()).filter((grant) => grant.application === client.application && grant.serverUrl === client.serverUrl);
    const others = [...new Set(stored.map((grant) => `${describeIdentity(grant.identity)} (\`context-auth logout ${url}${identityFlags(grant.identity)}\`)`))];
    throw new CliError(`Not logged in to ${url} as ${who}.${others.length > 0 ? ` Stored for it: ${others.join('; ')}.` : ''}`);
  }
  const failed = revocations.filter((revocation) => revocation.outcome === 'failed');
  const sentences = revocations.map(describe).join('. ');
  if (failed.length > 0) throw new CliError(`Logged out of ${url} as ${who} here only: ${sentences}.`);
  print(
    values.json
      ? {
          server: url,
          identity: client.identity,
          removed: revocations.length,
          revocations: revocations.map((r) => ({
            issuer: r.issuer,
            client_id: r.clientId,
            token: r.token,
            outcome: r.outcome,
            reason: r.reason ?? null,
            access_token_expires_at: r.accessTokenExpiresAt ?? null,
          })),
        }
      : `Logged out of ${url} as ${who}: ${sentences}.`,
  );
}
