import { OAuthError } from '../../core/errors.js';
import type { ConsentRecord, UserRecord } from '../../store/store.js';
import { approvedApplications } from '../approved-applications.js';
import { clientOrigin } from '../interaction/page-parts.js';
import { approvedApplicationFacts } from '../pages/account.js';
import { actionForm, recordTable, shownTime } from '../pages/admin/layout.js';
import { html, token, type SafeHtml } from '../pages/html.js';
import { revokedAccessTokens } from '../pages/revoked-tokens.js';
import { revokeApproval } from './approvals-operations.js';
import { clientNamed } from './clients.js';
import type { AdminAction, AdminSection, AdminView } from './section.js';

/*
 * The applications people approved, looked up by person (`?user=`) or by application
 * (`?client=`), each revocable. Never every consent at once: a store may hold 100,000 of them.
 */

/** More names or IDs than this in a lookup is not a name or an ID. */
const MAX_LOOKUP = 200;
/** An application approved by more people than this shows this many of them; looking a person up shows anyone's. */
const MAX_PEOPLE = 200;

export const APPROVALS: AdminSection = {
  name: 'approvals',
  title: 'Approvals',
  summary: 'The applications a person approved, or the people who approved an application; revoke any of them.',
  async render(view) {
    const user = lookup(view.query, 'user');
    const client = lookup(view.query, 'client');
    const forms = lookupForms(view, user ?? '', user === undefined ? (client ?? '') : '');
    if (user !== undefined) return html`${forms}${await personApprovals(view, user)}`;
    if (client !== undefined) return html`${forms}${await clientApprovals(view, client)}`;
    return html`<p class="muted">Look up a person to see the applications they approved, or an application to see who approved it.</p>${forms}`;
  },
};

export const REVOKE_APPROVAL: AdminAction = {
  name: 'revoke-approval',
  fields: ['user', 'client_id', 'from'],
  async describe(view, form) {
    const clientId = (form.get('client_id') ?? '').slice(0, MAX_LOOKUP);
    return `Revoke ${clientNamed(clientId ? await view.store.getClient(clientId) : undefined, clientId)} for ${(form.get('user') ?? '').slice(0, MAX_LOOKUP)}`;
  },
  done: (ctx, subject) =>
    `Approval revoked${subject ? `: ${subject}` : ''}. That application can no longer get tokens for this person. ${revokedAccessTokens(ctx.config.accessTokenTtl)}`,
  async run(view, form) {
    const username = form.get('user') ?? '';
    const clientId = form.get('client_id') ?? '';
    const result = await revokeApproval(view.store, username, clientId, view.ctx.now());
    if ('refused' in result) throw new OAuthError('invalid_request', 'nothing to revoke').withUserMessage(result.refused);
    // The store recorded the grants' revocations; reading them now lets a guard in this process refuse their tokens at once.
    await view.ctx.revocations.sync();
    view.ctx.log({ event: 'consent_revoked', user_id: result.user.id, client_id: clientId, by: 'admin', admin_id: view.admin.id });
    const back = form.get('from') === 'client' ? { client: clientId } : { user: username };
    const subject = `${clientNamed(await view.store.getClient(clientId), clientId)} for ${result.user.username}`;
    return { section: 'approvals', query: back, target: `${username} ${clientId}`, subject };
  },
};

/** A lookup value from the query: trimmed; undefined when absent or empty. */
function lookup(query: URLSearchParams, name: string): string | undefined {
  const value = query.get(name)?.trim();
  return value ? value : undefined;
}

/** Two small GET forms, so a lookup is a URL that can be shared and reloaded. */
function lookupForms(view: AdminView, user: string, client: string): SafeHtml {
  const action = view.href('approvals');
  return html`<div class="lookups">
<form method="get" action="${action}" class="search" role="search" aria-label="Look up a person">
<label for="lookup-user">Person (username)</label>
<div class="row"><input id="lookup-user" name="user" type="text" value="${user}" maxlength="${MAX_LOOKUP}" autocomplete="off" autocapitalize="none" spellcheck="false"><button type="submit">Show approvals</button></div>
</form>
<form method="get" action="${action}" class="search" role="search" aria-label="Look up an application">
<label for="lookup-client">Application (client ID)</label>
<div class="row"><input id="lookup-client" name="client" type="text" value="${client}" maxlength="${MAX_LOOKUP}" autocomplete="off" autocapitalize="none" spellcheck="false"><button type="submit">Show people</button></div>
</form>
</div>`;
}

/** `?user=`: what the person's account page shows them, with a Revoke button per application. */
async function personApprovals(view: AdminView, username: string): Promise<SafeHtml> {
  const user = username.length <= MAX_LOOKUP ? await view.store.getUser({ username }) : undefined;
  if (!user) return html`<p class="error" role="alert">There is no user named ${username}.</p>`;
  const applications = await approvedApplications(view.ctx, view.store, user.id);
  if (applications.length === 0) return html`<h2>Approved by ${user.username}</h2><p class="muted">${user.username} has approved no application.</p>`;
  return html`<h2>Approved by ${user.username}</h2>
<p class="muted">Revoking stops the application getting new tokens for this person at once: it has to ask them again. ${revokedAccessTokens(view.ctx.config.accessTokenTtl)}</p>
${applications.map(
  (app) => html`<section class="app">
${approvedApplicationFacts(app)}
<p><a href="${view.href('approvals', { client: app.clientId })}">Everyone who approved this application</a></p>
<div class="actions">${actionForm({
    action: view.action,
    csrfToken: view.csrfToken,
    name: REVOKE_APPROVAL.name,
    fields: { user: user.username, client_id: app.clientId },
    label: 'Revoke',
    danger: true,
    ariaLabel: `Revoke ${app.clientName} for ${user.username}`,
  })}</div>
</section>`,
)}`;
}

/** `?client=`: the people who approved the application, each revocable. */
async function clientApprovals(view: AdminView, clientId: string): Promise<SafeHtml> {
  const client = clientId.length <= MAX_LOOKUP ? await view.store.getClient(clientId) : undefined;
  if (!client) return html`<p class="error" role="alert">There is no client ${clientId}.</p>`;
  const consents = await view.store.listConsents({ clientId });
  const byUser = new Map<string, ConsentRecord[]>();
  for (const consent of consents) byUser.set(consent.userId, [...(byUser.get(consent.userId) ?? []), consent]);
  // Only the people shown are looked up: an application approved by thousands costs a page's worth of reads.
  const people: Array<{ user: UserRecord; consents: ConsentRecord[] }> = [];
  for (const [userId, theirs] of [...byUser].slice(0, MAX_PEOPLE)) {
    const user = await view.store.getUser({ id: userId });
    if (user) people.push({ user, consents: theirs });
  }
  people.sort((a, b) => (a.user.username < b.user.username ? -1 : a.user.username > b.user.username ? 1 : 0));
  const name = client.clientName ?? client.clientId;
  const origin = clientOrigin(client);
  // The Revoke button sits with the name: on a phone the table scrolls sideways, and its first column stays in view.
  const rows = people.map(({ user, consents: theirs }) => [
    html`<a href="${view.href('approvals', { user: user.username })}">${user.username}</a><br>${actionForm({
      action: view.action,
      csrfToken: view.csrfToken,
      name: REVOKE_APPROVAL.name,
      fields: { user: user.username, client_id: client.clientId, from: 'client' },
      label: 'Revoke',
      danger: true,
      ariaLabel: `Revoke ${name} for ${user.username}`,
    })}`,
    shownTime(Math.min(...theirs.map((consent) => consent.createdAt))),
    html`${theirs.map((consent) => html`<div>${token(consent.resource)}</div>`)}`,
    html`${theirs.map((consent) => html`<div>${consent.scope.length > 0 ? consent.scope.map((scope) => html`<code>${scope}</code> `) : html`<span class="muted">no scopes</span>`}</div>`)}`,
  ]);
  return html`<h2>People who approved ${name}${origin.clientNameUnverified ? html` <span class="tag">unverified</span>` : ''}</h2>
${origin.clientHost ? html`<p class="site">Published by <strong>${token(origin.clientHost)}</strong></p>` : ''}
<p class="muted">${token(client.clientId)} · last used ${shownTime(client.lastUsedAt)}</p>
${byUser.size > MAX_PEOPLE ? html`<p class="muted">Showing ${MAX_PEOPLE} of the ${byUser.size} people who approved it. Look a person up to see theirs.</p>` : ''}
${recordTable({ caption: `People who approved ${name}`, columns: ['Person', 'Approved', 'Servers', 'Scopes'], rows, empty: 'Nobody has approved this application.' })}`;
}
