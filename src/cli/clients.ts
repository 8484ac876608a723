import { registerClient, registrationResponse, validateClientMetadata } from '../authorization-server/index.js';
import { JWT_BEARER_GRANT_TYPE, OAuthError } from '../core/index.js';
import { parseArgs } from 'node:util';
import { COMMON_OPTIONS, STORE_OPTIONS, isoTime, parsed, print, table } from './args.js';
import { nowSeconds, withStore } from './data.js';
import { CliError, usageError } from './errors.js';

export const CLIENTS_HELP = `context-auth clients add --name N [--redirect-uri URI ...] [--secret] [--grant-type client_credentials]
                         [--scope "a b"] [--introspect]
    register a client; prints JSON with client_id (and client_secret, shown this once);
    a client_credentials client gets only mcp:tools unless --scope says more;
    --grant-type urn:ietf:params:oauth:grant-type:jwt-bearer makes a confidential client that
    presents ID-JAGs from a trusted identity provider (docs/enterprise.md)
context-auth clients list
context-auth clients remove CLIENT_ID   remove a client and everything issued to it`;

/** The scopes operators may grant: those a default `serve` supports, unless --scope says otherwise. */
const DEFAULT_SCOPES = ['mcp:tools', 'mcp:admin'];
const MACHINE_DEFAULT_SCOPE = 'mcp:tools';

export const CLIENTS_OPTIONS = {
  ...COMMON_OPTIONS,
  ...STORE_OPTIONS,
  name: { type: 'string' },
  'redirect-uri': { type: 'string', multiple: true },
  secret: { type: 'boolean' },
  'grant-type': { type: 'string', multiple: true },
  scope: { type: 'string' },
  introspect: { type: 'boolean' },
} as const;

export async function clientsCommand(args: string[]): Promise<void> {
  const { values, positionals } = parsed(() => parseArgs({ args, options: CLIENTS_OPTIONS, allowPositionals: true, strict: true }));
  const [action, id, ...rest] = positionals;
  if (values.help || !action) return print(CLIENTS_HELP);
  if (rest.length > 0) throw usageError(`unexpected argument ${rest[0]}`);

  if (action === 'add') {
    if (!values.name) throw usageError('clients add needs --name');
    const redirectUris = values['redirect-uri'] ?? [];
    const grantTypes = values['grant-type'] ?? (redirectUris.length > 0 ? ['authorization_code', 'refresh_token'] : []);
    if (grantTypes.length === 0) throw usageError('give --redirect-uri for a browser client, or --grant-type client_credentials');
    const confidential = Boolean(values.secret) || grantTypes.includes('client_credentials') || grantTypes.includes(JWT_BEARER_GRANT_TYPE) || Boolean(values.introspect);
    // A machine client's tokens carry no person's consent: it gets the base scope unless the
    // operator names more with --scope.
    const scope = values.scope ?? (grantTypes.includes('client_credentials') ? MACHINE_DEFAULT_SCOPE : undefined);
    let metadata;
    try {
      metadata = validateClientMetadata(
        {
          client_name: values.name,
          redirect_uris: redirectUris,
          grant_types: grantTypes,
          token_endpoint_auth_method: confidential ? 'client_secret_basic' : 'none',
          ...(scope === undefined ? {} : { scope }),
        },
        values.scope === undefined ? DEFAULT_SCOPES : values.scope.split(' ').filter(Boolean),
      );
    } catch (error) {
      if (error instanceof OAuthError) throw new CliError(`Cannot add the client: ${error.message}.`);
      throw error;
    }
    const registered = await withStore(values, (store) =>
      registerClient(store, metadata, nowSeconds(), { registeredBy: 'admin', canIntrospect: Boolean(values.introspect) }),
    );
    return print(registrationResponse(registered));
  }
  if (action === 'list') {
    const clients = await withStore(values, (store) => store.listClients());
    if (values.json) {
      return print(clients.map((c) => ({ client_id: c.clientId, client_name: c.clientName, registered_by: c.registeredBy, created_at: c.createdAt, ...c.metadata })));
    }
    return print(
      table(
        clients.map((c) => ({
          client_id: c.clientId,
          name: c.clientName ?? '',
          type: c.tokenEndpointAuthMethod === 'none' ? 'public' : 'confidential',
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
    const removed = await withStore(values, (store) => store.deleteClient(id));
    if (!removed) throw new CliError(`There is no client ${id}.`);
    return print(values.json ? { client_id: id, removed: true } : `Removed client ${id} and everything issued to it.`);
  }
  throw usageError(`unknown clients action ${action}`);
}
