import { parseArgs } from 'node:util';
import { ContextClient } from '../client/index.js';
import { COMMON_OPTIONS, parsed, print } from './args.js';
import { CLIENT_OPTIONS, clientOptions, DPOP_HELP, MACHINE_IDENTITY_HELP } from './client-options.js';
import { usageError } from './errors.js';

export const LOGIN_HELP = `context-auth login URL [--client-id ID] [--client-secret S] [--scope "a b"] [--no-browser]
                      [--grant-type TYPE] [--dpop] [--credentials FILE] [--quiet] [--json]
    authorize this machine for a context server (discovery, registration, browser, tokens)
${DPOP_HELP}
${MACHINE_IDENTITY_HELP}`;

function minutes(expiresAt: number | undefined): string {
  if (expiresAt === undefined) return 'no stated expiry';
  return `expires in ${Math.max(0, Math.round((expiresAt - Date.now() / 1000) / 60))} min`;
}

export const LOGIN_OPTIONS = { ...COMMON_OPTIONS, ...CLIENT_OPTIONS } as const;

export async function loginCommand(args: string[]): Promise<void> {
  const { values, positionals } = parsed(() => parseArgs({ args, options: LOGIN_OPTIONS, allowPositionals: true, strict: true }));
  if (values.help) return print(LOGIN_HELP);
  const [url, ...rest] = positionals;
  if (!url) throw usageError('login needs the context server URL');
  if (rest.length > 0) throw usageError(`unexpected argument ${rest[0]}`);
  const client = new ContextClient(await clientOptions(url, values));
  const grant = await client.login(values.scope ? { scope: values.scope } : {});
  if (values.json) {
    return print({ server: grant.serverUrl, issuer: grant.issuer, revision: grant.revision, client_id: grant.clientId, token_type: grant.tokenType ?? 'Bearer', scope: grant.scope ?? null, expires_at: grant.expiresAt ?? null, refresh_token: Boolean(grant.refreshToken) });
  }
  print(`Logged in to ${grant.serverUrl}
  authorization server  ${grant.issuer} (revision ${grant.revision})
  client                ${grant.clientId}
  scopes                ${grant.scope ?? '(none stated)'}
  access token          ${grant.tokenType === 'DPoP' ? 'DPoP-bound, ' : ''}${minutes(grant.expiresAt)}${grant.refreshToken ? ', refreshed automatically' : ''}`);
}
