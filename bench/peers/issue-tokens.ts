/**
 * Access tokens for the guard benches: one confidential client registered in `store`, then
 * client_credentials grants through the authorization server's own handler (no HTTP), the way
 * a context server's tokens are issued, signature included.
 */
import type { AuthorizationServer } from '../../src/authorization-server/index.js';
import { registerClient } from '../../src/authorization-server/clients.js';
import { validateClientMetadata } from '../../src/authorization-server/checks/client-metadata.js';
import type { Store } from '../../src/store/index.js';

/** A function that issues one new access token per call; `resource` names the audience when given. */
export async function tokenIssuer(as: AuthorizationServer, store: Store, issuer: string, resource?: string): Promise<() => Promise<string>> {
  const metadata = validateClientMetadata({ client_name: 'bench', grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_basic' }, [
    'mcp:tools',
  ]);
  const { client, clientSecret } = await registerClient(store, metadata, Math.floor(Date.now() / 1000), { registeredBy: 'admin' });
  const basic = `Basic ${Buffer.from(`${client.clientId}:${clientSecret}`).toString('base64')}`;
  const body = `grant_type=client_credentials&scope=mcp:tools${resource === undefined ? '' : `&resource=${encodeURIComponent(resource)}`}`;
  return async () => {
    const response = await as.handle(
      new Request(`${issuer}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic }, body }),
    );
    if (response.status !== 200) throw new Error(`token: ${response.status} ${await response.text()}`);
    return ((await response.json()) as { access_token: string }).access_token;
  };
}
