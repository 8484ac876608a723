import { parseArgs } from 'node:util';
import { FileTokenStore } from '../client/index.js';
import { COMMON_OPTIONS, isoTime, parsed, print, table } from './args.js';
import { usageError } from './errors.js';
import { identityLabel } from './identities.js';

export const STATUS_HELP = `context-auth status [--show-token] [--credentials FILE] [--json]
    stored authorizations (of the CLI and every application sharing the credentials file): whose
    each is (the person's, or a program's and by which grant) and when it expires; --show-token adds
    the access tokens`;

export const STATUS_OPTIONS = { ...COMMON_OPTIONS, 'show-token': { type: 'boolean' }, credentials: { type: 'string' } } as const;

export async function statusCommand(args: string[]): Promise<void> {
  const { values, positionals } = parsed(() => parseArgs({ args, options: STATUS_OPTIONS, allowPositionals: true, strict: true }));
  if (values.help) return print(STATUS_HELP);
  if (positionals.length > 0) throw usageError(`unexpected argument ${positionals[0]}`);
  const grants = await new FileTokenStore(values.credentials).listGrants();
  const now = Math.floor(Date.now() / 1000);
  const rows = grants.map((g) => ({
    server: g.serverUrl,
    application: g.application,
    identity: identityLabel(g.identity),
    issuer: g.issuer,
    client_id: g.clientId,
    scope: g.scope ?? '',
    expires: g.expiresAt === undefined ? '' : `${isoTime(g.expiresAt)}${g.expiresAt <= now ? ' (expired)' : ''}`,
    refresh: g.refreshToken ? 'yes' : 'no',
    // Tokens are shown only on request: a terminal's scrollback is not a secret store.
    ...(values['show-token'] ? { access_token: g.accessToken } : {}),
  }));
  if (values.json) return print(rows);
  print(
    table(rows, ['server', 'application', 'identity', 'issuer', 'client_id', 'scope', 'expires', 'refresh', ...(values['show-token'] ? ['access_token'] : [])]),
  );
}
