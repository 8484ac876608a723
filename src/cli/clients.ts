import { describeDropped, noSuchClient, registerClient, registrationResponse, removeClient, validateClientMetadata } from '../authorization-server/index.js';
import { DEVICE_CODE_GRANT_TYPE, JWT_BEARER_GRANT_TYPE, OAuthError } from '../core/index.js';
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

/** The scopes operators may grant: those a default `serve` supports, unless --scope says otherwise. */
const DEFAULT_SCOPES = ['mcp:tools', 'mcp:admin'];
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

/** The public keys of a private_key_jwt client, from --jwks FILE or --jwks-uri URL; checked with the rest of the metadata. */
function keyOptions(values: { jwks?: string; 'jwks-uri'?: string; secret?: boolean }): Record<string, unknown> | undefined {
  if (values.jwks === undefined && values['jwks-uri'] === undefined) return undefined;
  if (values.jwks !== undefined && values['jwks-uri'] !== undefined) throw usageError('give --jwks or --jwks-uri, not both');
  if (values.secret) throw usageError('a client with --jwks or --jwks-uri authenticates with its key, not a secret: drop --secret');
  if (values['jwks-uri'] !== undefined) return { token_endpoint_auth_method: 'private_key_jwt', jwks_uri: values['jwks-uri'] };
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
  return { token_endpoint_auth_method: 'private_key_jwt', jwks };
}

export async function clientsCommand(args: string[]): Promise<void> {
  const { values, positionals } = parsed(() => parseArgs({ args, options: CLIENTS_OPTIONS, allowPositionals: true, strict: true }));
  const [action, id, ...rest] = positionals;
  if (values.help || !action) return print(CLIENTS_HELP);
  if (rest.length > 0) throw usageError(`unexpected argument ${rest[0]}`);

  if (action === 'add') {
    if (!values.name) throw usageError('clients add needs --name');
    const redirectUris = values['redirect-uri'] ?? [];
    // `jwt-bearer` and `device_code` are short for their URNs, as the client verbs' --grant-type takes them.
    const grantTypes = (values['grant-type'] ?? (redirectUris.length > 0 ? ['authorization_code', 'refresh_token'] : [])).map((type) =>
      type === 'jwt-bearer' ? JWT_BEARER_GRANT_TYPE : type === 'device_code' ? DEVICE_CODE_GRANT_TYPE : type,
    );
    if (grantTypes.length === 0) throw usageError('give --redirect-uri for a browser client, or --grant-type client_credentials');
    const keys = keyOptions(values);
    const confidential = Boolean(values.secret) || grantTypes.includes('client_credentials') || grantTypes.includes(JWT_BEARER_GRANT_TYPE) || Boolean(values.introspect);
    // A machine client's tokens carry no person's consent (client credentials, ID-JAGs, workload
    // tokens): it gets the base scope unless the operator names more with --scope.
    const scope = values.scope ?? (grantTypes.some((type) => MACHINE_GRANTS.includes(type)) ? MACHINE_DEFAULT_SCOPE : undefined);
    let metadata;
    try {
      metadata = validateClientMetadata(
        {
          client_name: values.name,
          redirect_uris: redirectUris,
          grant_types: grantTypes,
          token_endpoint_auth_method: confidential ? 'client_secret_basic' : 'none',
          ...keys,
          ...(scope === undefined ? {} : { scope }),
          ...(values['dpop-bound'] ? { dpop_bound_access_tokens: true } : {}),
        },
        values.scope === undefined ? DEFAULT_SCOPES : values.scope.split(' ').filter(Boolean),
      );
    } catch (error) {
      if (error instanceof OAuthError) throw new CliError(`Cannot add the client: ${error.message}.`);
      throw error;
    }
    // An operator names each value on purpose: one the server would leave out is an error here, not a silent change.
    if (metadata.dropped.length > 0) throw new CliError(`Cannot add the client: ${describeDropped(metadata.dropped)}.`);
    const registered = await withStore(values, (store) =>
      registerClient(store, metadata, nowSeconds(), { registeredBy: 'admin', canIntrospect: Boolean(values.introspect) }),
    );
    return print(registrationResponse(registered));
  }
  if (action === 'list') {
    const clients = await withStore(values, (store) => store.listClients());
    warnOfUnlistedScopes(clients);
    if (values.json) {
      return print(clients.map((c) => ({ client_id: c.clientId, client_name: c.clientName, registered_by: c.registeredBy, created_at: c.createdAt, ...c.metadata })));
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
