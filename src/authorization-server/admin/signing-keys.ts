import { rotateSigningKeys } from '../keys.js';
import { actionForm, recordTable, shownTime } from '../pages/admin/layout.js';
import { html, token } from '../pages/html.js';
import type { AdminAction, AdminSection } from './section.js';

/*
 * The keys access tokens are signed with, as `context-auth keys list` shows them (public facts
 * only: the private key never leaves the store), and a rotation, as `context-auth keys rotate`.
 */

export const SIGNING_KEYS: AdminSection = {
  name: 'keys',
  title: 'Signing keys',
  summary: 'The keys access tokens are signed with; make a new one.',
  async render(view) {
    const keys = await view.store.listSigningKeys();
    const rows = keys.map((key) => [token(key.kid), html`<code>${key.alg}</code>`, statusOf(key.status), shownTime(key.createdAt)]);
    return html`<p class="muted">The current key signs new access tokens; the previous one is still published, so tokens it signed stay valid until they expire. Retired keys are no longer published.</p>
${recordTable({ caption: 'Signing keys', columns: ['Key ID', 'Algorithm', 'Status', 'Created'], rows, empty: 'No key yet: the server makes one when it first signs a token.' })}
<h2>Rotate</h2>
<p>Makes a new current key. It is published at once and signs new tokens a few seconds later, once resource servers can fetch it. The current key becomes the previous one: tokens it signed stay valid until they expire. The previous key is retired, and tokens it signed are refused.</p>
${actionForm({ action: view.action, csrfToken: view.csrfToken, name: ROTATE_KEY.name, fields: {}, label: 'Rotate now' })}`;
  },
};

export const ROTATE_KEY: AdminAction = {
  name: 'rotate-key',
  fields: [],
  describe: async () => 'Make a new signing key',
  done: (_ctx, subject) =>
    `New signing key made${subject ? `: ${subject}` : ''}. It is published now and signs new tokens within seconds; tokens signed with the previous key stay valid until they expire.`,
  async run(view) {
    const key = await rotateSigningKeys(view.store, view.ctx.now());
    // This process reads the keys again now, rather than when its short cache runs out.
    view.ctx.keys.invalidate();
    return { section: 'keys', target: key.kid, subject: key.kid };
  },
};

function statusOf(status: 'current' | 'previous' | 'retired') {
  if (status === 'current') return html`<strong>current</strong>`;
  if (status === 'previous') return html`previous <span class="muted">(still valid)</span>`;
  return html`<span class="muted">retired</span>`;
}
