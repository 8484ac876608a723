import { OAuthError } from '../../core/errors.js';
import { JWT_BEARER_GRANT_TYPE } from '../../core/protocol.js';
import type { ClientRecord } from '../../store/store.js';
import { isDocumentClientId } from '../client-documents/documents.js';
import { clientOrigin } from '../interaction/page-parts.js';
import { html, token, type SafeHtml } from '../pages/html.js';
import { actionForm, recordTable, shownTime } from '../pages/admin/layout.js';
import { revokedAccessTokens } from '../pages/revoked-tokens.js';
import { noSuchClient, removeClient } from './operations.js';
import { emptyListing, listingControls, muted, pageLimit, pageOf, pageRequest, requiredField } from './paging.js';
import type { AdminAction, AdminSection, AdminView } from './section.js';

export type ClientKind = 'document' | 'dynamic' | 'machine' | 'pre-registered';

const MACHINE_GRANTS = new Set<string>(['client_credentials', JWT_BEARER_GRANT_TYPE]);

/**
 * Where a client came from, as its record shows it: a URL client ID is a metadata document's;
 * a client registered through /register is dynamic; an operator's client that only gets tokens
 * for itself (client credentials, jwt-bearer) is a machine; any other operator's client is
 * pre-registered.
 */
export function clientKind(client: ClientRecord): ClientKind {
  if (isDocumentClientId(client.clientId)) return 'document';
  if (client.registeredBy === 'dynamic') return 'dynamic';
  if (client.grantTypes.length > 0 && client.grantTypes.every((grant) => MACHINE_GRANTS.has(grant))) return 'machine';
  return 'pre-registered';
}

/**
 * When the server's sweep removes the client: dynamically registered ones (metadata-document
 * clients are cached that way too) `registrationTtl` after they were last used; an operator's
 * never, nor any when the TTL is 0.
 */
export function clientExpiry(client: ClientRecord, registrationTtl: number): number | null {
  if (client.registeredBy !== 'dynamic' || registrationTtl <= 0) return null;
  return (client.lastUsedAt ?? client.createdAt) + registrationTtl;
}

/** The name as the console can vouch for it: a document client's site, a self-declared name marked so. */
function nameCell(client: ClientRecord): SafeHtml {
  const origin = clientOrigin(client);
  const name = client.clientName === null ? muted('no name') : html`${client.clientName}`;
  return html`${name}${origin.clientNameUnverified ? html` <span class="tag" title="Chosen by whoever registered it">unverified</span>` : ''}${
    origin.clientHost ? html`<br><span class="muted">from ${origin.clientHost}</span>` : ''
  }`;
}

/**
 * What the client may do, as kept: its grant types and redirect URIs (a registration or a
 * document may have asked for more; what the server left out is not shown as if it were there).
 */
function grantsCell(client: ClientRecord): SafeHtml {
  return client.grantTypes.length === 0 ? muted('none') : html`${client.grantTypes.map((grant, i) => html`${i > 0 ? html`<br>` : ''}<code>${grant}</code>`)}`;
}

function redirectsCell(client: ClientRecord): SafeHtml {
  return client.redirectUris.length === 0 ? muted('none') : html`${client.redirectUris.map((uri, i) => html`${i > 0 ? html`<br>` : ''}${token(uri)}`)}`;
}

function row(view: AdminView, client: ClientRecord): SafeHtml[] {
  // The button sits under the name, so it stays in view when the table scrolls sideways on a phone.
  const remove = actionForm({
    action: view.action,
    csrfToken: view.csrfToken,
    name: 'remove-client',
    fields: { client_id: client.clientId, return: 'clients' },
    label: 'Remove',
    danger: true,
    ariaLabel: `Remove client ${client.clientName ?? client.clientId}`,
  });
  return [
    html`${nameCell(client)}<div class="row-actions">${remove}</div>`,
    token(client.clientId),
    html`${clientKind(client)}`,
    grantsCell(client),
    redirectsCell(client),
    shownTime(client.createdAt),
    shownTime(client.lastUsedAt),
    shownTime(clientExpiry(client, view.ctx.config.registrationTtl)),
  ];
}

/** Every registered client, 50 a page in client ID order, searchable by ID and name. */
export const CLIENTS: AdminSection = {
  name: 'clients',
  title: 'Clients',
  summary:
    'Registered applications: where each came from, what it may do, when it was last used, when an unused one is removed. Remove one and everything issued to it.',
  async render(view) {
    const request = pageRequest(view.query);
    const { shown, nextAfter } = pageOf(await view.store.listClientsPage({ ...request, limit: pageLimit }), (client) => client.clientId);
    const controls = listingControls(view, 'clients', request, nextAfter, 'Search by client ID or name');
    return html`${controls.search}
${recordTable({
  caption: 'Clients',
  columns: ['Name', 'Client ID', 'Kind', 'Grant types', 'Redirect URIs', 'Created', 'Last used', 'Expires if unused'],
  rows: shown.map((client) => row(view, client)),
  empty: emptyListing(request, 'clients'),
})}
${controls.pages}`;
  },
};

/**
 * Removes a client and everything issued to it, as `clients remove` does, once confirmed; this
 * process refuses its access tokens at once.
 */
export const REMOVE_CLIENT: AdminAction = {
  name: 'remove-client',
  fields: ['client_id'],
  async describe(view, form) {
    const clientId = (form.get('client_id') ?? '').slice(0, 200);
    return `Remove the client ${clientNamed(clientId ? await view.store.getClient(clientId) : undefined, clientId)}`;
  },
  confirm: {
    consequence: 'This deletes its registration and revokes everything issued to it: whoever runs it must register again, and everyone must approve it again.',
    button: 'Remove',
  },
  done: (ctx, subject) => `Client removed${subject ? `: ${subject},` : ','} with everything issued to it. ${revokedAccessTokens(ctx.config.accessTokenTtl)}`,
  async run(view, form) {
    const clientId = requiredField(form, 'client_id');
    // Read before it goes: the notice names it.
    const client = await view.store.getClient(clientId);
    const { removed } = await removeClient(view.store, clientId, view.ctx.now());
    if (!removed) throw new OAuthError('invalid_request', 'no such client', 404).withUserMessage(noSuchClient(clientId));
    // The store recorded the grants' revocations; reading them now makes this process refuse their tokens at once.
    await view.ctx.revocations.sync();
    return { section: 'clients', target: clientId, subject: clientNamed(client, clientId) };
  },
};

/** A client as a notice names it: its name (as registered) and its ID, or the ID alone. */
export function clientNamed(client: ClientRecord | undefined, clientId: string): string {
  return client?.clientName ? `${client.clientName} (${clientId})` : clientId;
}
