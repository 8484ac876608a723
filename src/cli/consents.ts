import { parseArgs } from 'node:util';
import { listConsents, revokeConsent } from '../admin/index.js';
import { COMMON_OPTIONS, STORE_OPTIONS, isoTime, parsed, print, table } from './args.js';
import { nowSeconds, withStore } from './data.js';
import { CliError, didYouMean, usageError } from './errors.js';

export const CONSENTS_HELP = `context-auth consents list [--user NAME] [--client CLIENT_ID]
context-auth consents revoke --user NAME --client CLIENT_ID   forget the consent and revoke its tokens
  Refresh tokens stop at once. Access tokens are refused within about a second by serve on the
  same data folder or database, by remote context servers polling its revocation list within
  their interval, and elsewhere only when they expire (serve's access token lifetime, 10 minutes
  by default).`;

export const CONSENTS_OPTIONS = { ...COMMON_OPTIONS, ...STORE_OPTIONS, user: { type: 'string' }, client: { type: 'string' } } as const;

export async function consentsCommand(args: string[]): Promise<void> {
  const { values, positionals } = parsed(() => parseArgs({ args, options: CONSENTS_OPTIONS, allowPositionals: true, strict: true }));
  const [action, ...rest] = positionals;
  if (values.help || !action) return print(CONSENTS_HELP);
  if (rest.length > 0) throw usageError(`unexpected argument ${rest[0]}`);
  if (action === 'revoke') {
    const { user, client } = values;
    if (!user || !client) throw usageError('consents revoke needs --user and --client');
    const result = await withStore(values, (store) => revokeConsent(store, user, client, nowSeconds()));
    if ('refused' in result) throw new CliError(result.refused);
    return print(
      values.json
        ? { revoked: result.revoked }
        : `Revoked ${result.revoked} consent(s). Their refresh tokens no longer work; their access tokens are refused within about a second by serve on this store, and elsewhere when they expire (unless that context server follows the revocation list).`,
    );
  }
  // Told before the store is opened: a mistyped action is not a missing database.
  if (action !== 'list') throw usageError(`unknown consents action ${action}${didYouMean(action, ['list', 'revoke'])}`);
  await withStore(values, async (store) => {
    const listed = await listConsents(store, {
      ...(values.user !== undefined ? { username: values.user } : {}),
      ...(values.client ? { clientId: values.client } : {}),
    });
    if ('refused' in listed) throw new CliError(listed.refused);
    const { consents } = listed;
    const names = new Map((await store.listUsers()).map((u) => [u.id, u.username]));
    const rows = consents.map((c) => ({
      user: names.get(c.userId) ?? c.userId,
      client_id: c.clientId,
      resource: c.resource,
      scope: c.scope.join(' '),
      updated: isoTime(c.updatedAt),
    }));
    print(values.json ? rows : table(rows, ['user', 'client_id', 'resource', 'scope', 'updated']));
  });
}
