import { OAuthError } from '../../core/errors.js';
import type { UserIdentityRecord, UserRecord } from '../../store/store.js';
import type { Params } from '../http/params.js';
import { html, type SafeHtml } from '../pages/html.js';
import { actionForm, recordTable, shownTime } from '../pages/admin/layout.js';
import { revokedAccessTokens } from '../pages/revoked-tokens.js';
import { noSuchUser, removeUser, setAdministrator, signOutEverywhere } from './operations.js';
import { emptyListing, listingControls, muted, pageLimit, pageOf, pageRequest, requiredField } from './paging.js';
import type { AdminAction, AdminSection, AdminView } from './section.js';

const MAX_USERNAME = 64;

/** How a person signs in: a local password, and each upstream provider with who they are there. */
function signsInWith(user: UserRecord, identities: UserIdentityRecord[]): SafeHtml {
  const ways: SafeHtml[] = [];
  if (user.passwordHash !== null) ways.push(html`password`);
  for (const identity of identities) ways.push(html`${identity.provider}: ${identity.email ?? identity.subject}`);
  return ways.length === 0 ? muted('nothing (cannot sign in)') : html`${ways.map((way, i) => html`${i > 0 ? html`<br>` : ''}${way}`)}`;
}

function actions(view: AdminView, user: UserRecord): SafeHtml {
  const form = (name: string, label: string, fields: Record<string, string> = {}, danger = false) =>
    actionForm({
      action: view.action,
      csrfToken: view.csrfToken,
      name,
      fields: { username: user.username, return: 'people', ...fields },
      label,
      danger,
      ariaLabel: `${label}: ${user.username}`,
    });
  const self = user.id === view.admin.id;
  return html`<div class="row-actions">
${form('sign-out-everywhere', 'Sign out everywhere')}
${user.admin === true ? (self ? '' : form('set-admin', 'Revoke administrator', { admin: 'off' })) : form('set-admin', 'Make administrator', { admin: 'on' })}
${self ? '' : form('remove-user', 'Remove', {}, true)}
</div>`;
}

function row(view: AdminView, user: UserRecord, identities: UserIdentityRecord[]): SafeHtml[] {
  // The buttons sit under the name, so they stay in view when the table scrolls sideways on a phone.
  return [
    html`<strong>${user.username}</strong>${user.id === view.admin.id ? html` <span class="muted">(you)</span>` : ''} <a href="${view.href('approvals', { user: user.username })}">Approvals</a>${actions(view, user)}`,
    signsInWith(user, identities),
    user.admin === true ? html`<span class="badge">administrator</span>` : muted('no'),
    shownTime(user.createdAt),
    shownTime(user.lastSignInAt),
  ];
}

/** Every person with an account, 50 a page in username order, searchable by username. */
export const PEOPLE: AdminSection = {
  name: 'people',
  title: 'People',
  summary: 'Accounts: how each person signs in, when they last did, who is an administrator. Sign a person out everywhere, or remove them.',
  async render(view) {
    const request = pageRequest(view.query);
    const { shown, nextAfter } = pageOf(await view.store.listUsersPage({ ...request, limit: pageLimit }), (user) => user.username);
    // One small lookup per person shown (at most a page's worth), never every identity in the store.
    const identities = await Promise.all(shown.map((user) => view.store.listUserIdentities({ userId: user.id })));
    const controls = listingControls(view, 'people', request, nextAfter, 'Search by username');
    return html`${controls.search}
${recordTable({
  caption: 'People',
  columns: ['Username', 'Signs in with', 'Administrator', 'Created', 'Last sign-in'],
  rows: shown.map((user, i) => row(view, user, identities[i]!)),
  empty: emptyListing(request, 'people'),
})}
${controls.pages}`;
  },
};

const usernameOf = (form: Params): string => requiredField(form, 'username', MAX_USERNAME);
const notFound = (username: string): OAuthError => new OAuthError('invalid_request', 'no such user', 404).withUserMessage(noSuchUser(username));

/** Ends every browser session of the person: whoever holds one must sign in again. */
export const SIGN_OUT_EVERYWHERE: AdminAction = {
  name: 'sign-out-everywhere',
  fields: ['username'],
  describe: async (_view, form) => `Sign ${shownUsername(form)} out everywhere`,
  done: (_ctx, subject) => `Signed out everywhere: every browser session of ${subject ?? 'that person'} has ended.`,
  async run(view, form) {
    const username = usernameOf(form);
    const { found } = await signOutEverywhere(view.store, username);
    if (!found) throw notFound(username);
    return { section: 'people', target: username, subject: username };
  },
};

/**
 * Removes a person with their sessions, consents and grants, as `users remove` does, once
 * confirmed; this process refuses their applications' access tokens at once.
 */
export const REMOVE_USER: AdminAction = {
  name: 'remove-user',
  fields: ['username'],
  describe: async (_view, form) => `Remove the person ${shownUsername(form)}`,
  confirm: {
    consequence:
      'This deletes their account, their sessions and their approvals, and revokes the tokens of every application they approved. It cannot be undone.',
    button: 'Remove',
  },
  done: (ctx, subject) =>
    `Person removed${subject ? `: ${subject},` : ','} with their sessions and approvals. ${revokedAccessTokens(ctx.config.accessTokenTtl, 'their applications already hold')}`,
  async run(view, form) {
    const username = usernameOf(form);
    if (username === view.admin.username) {
      throw new OAuthError('invalid_request', 'an administrator cannot remove themselves').withUserMessage(
        'You cannot remove your own account here. Another administrator can, or `context-auth users remove`.',
      );
    }
    const { removed } = await removeUser(view.store, username, view.ctx.now());
    if (!removed) throw notFound(username);
    // The store recorded the grants' revocations; reading them now makes this process refuse their tokens at once.
    await view.ctx.revocations.sync();
    return { section: 'people', target: username, subject: username };
  },
};

/** Makes a person an administrator or no longer one, as `users admin NAME on|off` does; never your own rights away. */
export const SET_ADMIN: AdminAction = {
  name: 'set-admin',
  fields: ['username', 'admin'],
  describe: async (_view, form) =>
    form.get('admin') === 'off' ? `Revoke the administrator rights of ${shownUsername(form)}` : `Make ${shownUsername(form)} an administrator`,
  done: (_ctx, subject) => `Administrator rights changed${subject ? `: ${subject}` : ''}.`,
  async run(view, form) {
    const username = usernameOf(form);
    const setting = form.get('admin');
    if (setting !== 'on' && setting !== 'off') throw new OAuthError('invalid_request', 'admin must be on or off').withUserMessage('Unexpected form.');
    if (setting === 'off' && username === view.admin.username) {
      // Revoking yourself could leave the console with no administrator, and you locked out mid-task.
      throw new OAuthError('invalid_request', 'an administrator cannot revoke their own rights').withUserMessage(
        'You cannot revoke your own administrator rights. Another administrator can, or `context-auth users admin NAME off`.',
      );
    }
    const { found } = await setAdministrator(view.store, username, setting === 'on');
    if (!found) throw notFound(username);
    return { section: 'people', target: username, subject: `${username} is ${setting === 'on' ? 'now' : 'no longer'} an administrator` };
  },
};

/** The username a form names, as a description shows it before it is checked. */
const shownUsername = (form: Params): string => (form.get('username') ?? '').slice(0, MAX_USERNAME);
