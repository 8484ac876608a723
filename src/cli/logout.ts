import { parseArgs } from 'node:util';
import { ContextClient } from '../client/index.js';
import { COMMON_OPTIONS, parsed, print } from './args.js';
import { CLIENT_OPTIONS, clientOptions } from './client-options.js';
import { CliError, usageError } from './errors.js';

export const LOGOUT_HELP = `context-auth logout URL [--client-id ID] [--client-secret S] [--credentials FILE] [--quiet] [--json]
    revoke and forget the tokens for a context server (--client-id and --client-secret: the client
    given to login, as which the revocation authenticates). The authorization server revokes the
    grant; a context server that follows its revocations (as serve's own does) refuses the access
    token at once, any other until it expires.`;

/** Of the client options, those a logout uses: which client revokes, and where the tokens are. */
export const LOGOUT_OPTIONS = {
  ...COMMON_OPTIONS,
  'client-id': CLIENT_OPTIONS['client-id'],
  'client-secret': CLIENT_OPTIONS['client-secret'],
  credentials: CLIENT_OPTIONS.credentials,
  quiet: CLIENT_OPTIONS.quiet,
} as const;

export async function logoutCommand(args: string[]): Promise<void> {
  const { values, positionals } = parsed(() => parseArgs({ args, options: LOGOUT_OPTIONS, allowPositionals: true, strict: true }));
  if (values.help) return print(LOGOUT_HELP);
  const [url, ...rest] = positionals;
  if (!url) throw usageError('logout needs the context server URL');
  if (rest.length > 0) throw usageError(`unexpected argument ${rest[0]}`);
  const removed = await new ContextClient({ ...(await clientOptions(url, values)), interactive: false }).logout();
  if (removed === 0) throw new CliError(`Not logged in to ${url}.`);
  print(
    values.json
      ? { server: url, removed }
      : `Logged out of ${url}: the tokens are forgotten here and revoked at the authorization server. A context server that follows its revocations refuses the access token at once; any other accepts it until it expires.`,
  );
}
