import { addClient, removeClient, type ClientOptions } from '../admin/index.js';
import { JWT_BEARER_GRANT_TYPE } from '../core/index.js';
import type { ClientRecord } from '../store/index.js';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { COMMON_OPTIONS, STORE_OPTIONS, isoTime, parsed, print, table } from './args.js';
import { nowSeconds, withStore } from './data.js';
import { CliError, didYouMean, usageError } from './errors.js';

export const CLIENTS_HELP = `context-auth clients add --name N [--redirect-uri URI ...] [--secret] [--grant-type client_credentials]
                         [--jwks FILE | --jwks-uri URL] [--scope "a b"] [--introspect] [--dpop-bound]
    register a client; prints JSON with client_id (and client_secret, shown this once);
    a client_credentials or jwt-bearer client gets only mcp:tools unless --scope says more;
    --jwks FILE (a JSON Web Key Set of public keys) or --jwks-uri URL (https) registers a
    private_key_jwt client: it signs client assertions with its private key and gets no secret;
    --grant-type jwt-bearer (or its URN, urn:ietf:params:oauth:grant-type:jwt-bearer) makes a
    confidential client that presents ID-JAGs from a trusted identity provider (docs/enterprise.md);
    --grant-type device_code (its URN too) --grant-type refresh_token makes a client of the device
    authorization grant, needing no redirect URI (docs/device.md);
    --dpop-bound: the client must send a DPoP proof with every token request (docs/dpop.md)
context-auth clients list
context-auth clients remove CLIENT_ID   remove a client and everything issued to it`;

const MACHINE_DEFAULT_SCOPE = 'mcp:tools';
/** The grants whose tokens no person consents to. */
const MACHINE_GRANTS: readonly string[] = ['client_credentials', JWT_BEARER_GRANT_TYPE];

export const CLIENTS_OPTIONS = {
  ...COMMON_OPTIONS,
  ...STORE_OPTIONS,
  name: { type: 'string' },
  'redirect-uri': { type: 'string', multiple: true },
  secret: { type: 'boolean' },
  'grant-type': { type: 'string', multiple: true },
  scope: { type: 'string' },
  introspect: { type: 'boolean' },
  'dpop-bound': { type: 'boolean' },
  jwks: { type: 'string' },
  'jwks-uri': { type: 'string' },
} as const;

const noSuchClient = (clientId: string): string => `There is no client ${clientId}.`;

/** The public keys of a private_key_jwt client, from --jwks FILE or --jwks-uri URL; checked with the rest of the metadata. */
function keyOptions(values: { jwks?: string; 'jwks-uri'?: string; secret?: boolean }): Pick<ClientOptions, 'jwks' | 'jwksUri'> {
  if (values.jwks === undefined && values['jwks-uri'] === undefined) return {};
  if (values.jwks !== undefined && values['jwks-uri'] !== undefined) throw usageError('give --jwks or --jwks-uri, not both');
  if (values.secret) throw usageError('a client with --jwks or --jwks-uri authenticates with its key, not a secret: drop --secret');
  if (values['jwks-uri'] !== undefined) return { jwksUri: values['jwks-uri'] };
  const file = values.jwks!;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new CliError(`Cannot read --jwks ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`);
  }
  let jwks: unknown;
  try {
    jwks = JSON.parse(text);
  } catch {
    // Not the parser's words: they quote the file's first characters, which could be a key's.
    const what = /-----BEGIN [A-Z0-9 ]*KEY-----/.test(text) ? 'a PEM key, not JSON' : 'not JSON';
    throw new CliError(`--jwks ${file} is ${what}: --jwks takes the public keys as a JSON Web Key Set, {"keys": [...]}.`);
  }
  return { jwks };
}

export async function clientsCommand(args: string[]): Promise<void> {
  const { values, positionals } = parsed(() => parseArgs({ args, options: CLIENTS_OPTIONS, allowPositionals: true, strict: true }));
  const [action, id, ...rest] = positionals;
  if (values.help || !action) return print(CLIENTS_HELP);
  if (rest.length > 0) throw usageError(`unexpected argument ${rest[0]}`);

  if (action === 'add') {
    if (!values.name) throw usageError('clients add needs --name');
    const redirectUris = values['redirect-uri'] ?? [];
    if (redirectUris.length === 0 && !values['grant-type']) throw usageError('give --redirect-uri for a browser client, or --grant-type client_credentials');
    const options: ClientOptions = {
      name: values.name,
      redirectUris,
      ...(values['grant-type'] ? { grantTypes: values['grant-type'] } : {}),
      ...keyOptions(values),
      ...(values.secret ? { secret: true } : {}),
      ...(values.scope === undefined ? {} : { scope: values.scope }),
      ...(values.introspect ? { introspect: true } : {}),
      ...(values['dpop-bound'] ? { dpopBound: true } : {}),
    };
    const added = await withStore(values, (store) => addClient(store, options, nowSeconds()));
    if ('refused' in added) throw new CliError(added.refused);
    return print(added.registration);
  }
  if (action === 'list') {
    const clients = await withStore(values, (store) => store.listClients());
    warnOfUnlistedScopes(clients);
    if (values.json) {
      return print(
        clients.map((c) => ({ client_id: c.clientId, client_name: c.clientName, registered_by: c.registeredBy, created_at: c.createdAt, ...c.metadata })),
      );
    }
    return print(
      table(
        clients.map((c) => ({
          client_id: c.clientId,
          name: c.clientName ?? '',
          type: c.tokenEndpointAuthMethod === 'none' ? 'public' : c.tokenEndpointAuthMethod === 'private_key_jwt' ? 'confidential (key)' : 'confidential',
          via: c.registeredBy,
          created: isoTime(c.createdAt),
          redirect_uris: c.redirectUris.join(' '),
        })),
        ['client_id', 'name', 'type', 'via', 'created', 'redirect_uris'],
      ),
    );
  }
  if (action === 'remove') {
    if (!id) throw usageError('clients remove needs a CLIENT_ID');
    const { removed } = await withStore(values, (store) => removeClient(store, id, nowSeconds()));
    if (!removed) throw new CliError(noSuchClient(id));
    return print(values.json ? { client_id: id, removed: true } : `Removed client ${id} and everything issued to it.`);
  }
  throw usageError(`unknown clients action ${action}${didYouMean(action, ['add', 'list', 'remove'])}`);
}

/**
 * Machine clients registered before their scope had a default have no scope list: the server
 * gives their grants only the default scopes. Said on stderr, so that --json stays one document.
 */
function warnOfUnlistedScopes(clients: ClientRecord[]): void {
  for (const client of clients) {
    if (client.scope !== null || !client.grantTypes.some((type) => MACHINE_GRANTS.includes(type))) continue;
    process.stderr.write(
      `warning: client ${client.clientId} has no scope list: its client_credentials and jwt-bearer tokens are limited to the default scope (${MACHINE_DEFAULT_SCOPE}). To allow more, remove it and add it again with --scope.\n`,
    );
  }
}
