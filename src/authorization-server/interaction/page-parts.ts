import { OAuthError } from '../../core/errors.js';
import type { ClientRecord, InteractionRecord } from '../../store/store.js';
import { accountPath } from '../account-link.js';
import { isDocumentClientId } from '../client-documents/documents.js';
import type { InteractionServices } from './state.js';

/** What every interaction page shows or posts: the client, its name, the form's action and csrf token. */
export async function pageBasics(
  ctx: InteractionServices,
  interaction: InteractionRecord,
): Promise<{ client: ClientRecord; clientName: string; action: string; csrfToken: string }> {
  const client = await ctx.store.getClient(interaction.clientId);
  if (!client) {
    throw new OAuthError('invalid_client', 'the client was deleted during the interaction', 400).withUserMessage(
      'The application was removed while you were signing in.',
    );
  }
  return {
    client,
    clientName: client.clientName ?? client.clientId,
    action: `${ctx.config.basePath}/interaction/${interaction.id}`,
    csrfToken: interaction.csrfToken,
  };
}

/**
 * What the consent page can vouch for about the client: a metadata-document client's site (its
 * description was fetched there); a dynamically registered client's name is only what whoever
 * registered it chose. An operator's client (`clients add`) is neither.
 */
export function clientOrigin(client: ClientRecord): { clientHost?: string; clientNameUnverified?: boolean } {
  if (isDocumentClientId(client.clientId)) return { clientHost: new URL(client.clientId).host };
  return client.registeredBy === 'dynamic' && client.clientName !== null ? { clientNameUnverified: true } : {};
}

/** What the consent pages say of the request: who asks (and what of it is verified), where it returns, for what; and where to revoke it later. */
export function requestShown(ctx: InteractionServices, client: ClientRecord, interaction: InteractionRecord) {
  const account = accountPath(ctx);
  return {
    ...(account ? { accountPath: account } : {}),
    clientId: client.clientId,
    ...clientOrigin(client),
    ...redirectShown(interaction.request.redirectUri),
    scopes: interaction.request.scope,
    resource: interaction.request.resource,
  };
}

/**
 * Where the redirect URI leads, as the consent page shows it: a web site's host; or, for a
 * native app's own scheme (RFC 8252 §7.1), an app on the person's device, named by its scheme.
 */
export function redirectShown(redirectUri: string): { redirectHost: string; redirectScheme?: string } {
  const url = new URL(redirectUri);
  if (isWebUrl(url)) return { redirectHost: url.host };
  return { redirectHost: url.host ? `${url.protocol}//${url.host}` : url.protocol, redirectScheme: url.protocol };
}

function isWebUrl(url: URL): boolean {
  return url.protocol === 'https:' || url.protocol === 'http:';
}

/**
 * The origins the page's form may lead to: ours, the client's (for the final redirect: its
 * origin, or for an app's own scheme the scheme, as CSP writes it), and the upstream provider's,
 * where approving sends a person who signs in there.
 */
export function formTargets(interaction: InteractionRecord, upstreamOrigin?: string): string[] {
  const redirect = new URL(interaction.request.redirectUri);
  return [isWebUrl(redirect) ? redirect.origin : redirect.protocol, ...(upstreamOrigin ? [upstreamOrigin] : [])];
}
