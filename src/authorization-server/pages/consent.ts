import { html, token } from './html.js';
import { page, type Page } from './layout.js';

export interface ConsentPageInput {
  action: string;
  csrfToken: string;
  /** Who is signed in; absent when the person signs in upstream after approving. */
  username?: string;
  /** The upstream provider the person will sign in at once they approve (per-client consent before forwarding). */
  upstreamName?: string;
  clientName: string;
  clientId: string;
  /** For a client that describes itself at a URL (a metadata document): that site, shown first as what is verified. */
  clientHost?: string;
  /** The name is only what whoever registered the client (dynamic registration) chose: marked unverified. */
  clientNameUnverified?: boolean;
  redirectHost: string;
  /** Set when the redirect URI is a native app's own scheme (`cursor:`): the code goes to an app on the person's device. */
  redirectScheme?: string;
  scopes: string[];
  resource: string;
  formTargets: string[];
  /** The account page, where approved applications are revoked; absent where there is none. */
  accountPath?: string;
}

/**
 * The consent form: names the client, where it will be sent back to, the scopes and the resource.
 * Contract: a submit button `name="decision"` with value `approve` or `deny`.
 */
export function consentPage(input: ConsentPageInput): Page {
  return page(
    'Authorize access',
    html`<h1>Authorize ${input.clientName}?</h1>
${clientNotices(input)}
${input.redirectScheme ? html`<p class="site">Returns to an app on your device, not to a website: approving hands the result to the app that opens <code>${input.redirectScheme}</code> links on this device. Approve only if you started ${input.clientName} here yourself.</p>` : ''}
<dl>
${applicationRow(input)}
<dt>Returns to</dt><dd>${input.redirectScheme ? html`an app on your device: ` : ''}${token(input.redirectHost)}</dd>
<dt>Server</dt><dd>${token(input.resource)}</dd>
${accessRow(input.scopes)}
</dl>
<p class="muted">Only approve applications you started yourself. ${revokeLater(input.accountPath, 'this')}</p>
${decisionForm(input)}`,
    { formTargets: input.formTargets },
  );
}

/** The parts every consent page shows of the client and the person: what is verified, what is not, and who signs in. */
type ClientFacts = Pick<ConsentPageInput, 'clientName' | 'clientId' | 'clientHost' | 'clientNameUnverified' | 'username' | 'upstreamName'>;

/** What is verified of the client (a metadata document's site), what is not (a self-chosen name), and who is signed in. */
export function clientNotices(input: ClientFacts) {
  return html`${input.clientHost ? html`<p class="site">Verified: this application is published by <strong>${token(input.clientHost)}</strong>, where its description (and its name) came from. Approve only if you trust that site.</p>` : ''}
${input.clientNameUnverified ? html`<p class="site unverified">Unverified name: whoever registered this application chose it, and anyone can register any name. Approve only if you started it yourself.</p>` : ''}
${
  input.username !== undefined
    ? html`<p class="muted">Signed in as <strong>${input.username}</strong></p>`
    : html`<p class="muted">Next you sign in with <strong>${input.upstreamName ?? ''}</strong></p>`
}`;
}

export function applicationRow(input: ClientFacts) {
  return html`<dt>Application</dt><dd>${input.clientName}${input.clientNameUnverified ? html` <span class="tag">unverified</span>` : ''}<br><span class="muted">${token(input.clientId)}</span></dd>`;
}

export function accessRow(scopes: string[]) {
  return html`<dt>Access</dt><dd>${scopes.length > 0 ? html`<ul class="scopes">${scopes.map((scope) => html`<li><code>${scope}</code></li>`)}</ul>` : html`<span class="muted">no scopes</span>`}</dd>`;
}

/** "You can revoke … later", a link to the account page where there is one. */
export function revokeLater(accountPath: string | undefined, what: string) {
  return accountPath ? html`You can <a href="${accountPath}">revoke ${what} later</a>.` : html`You can revoke ${what} later.`;
}

/** The approve and deny buttons. Contract: a submit button `name="decision"` with value `approve` or `deny`. */
export function decisionForm(input: { action: string; csrfToken: string }) {
  return html`<form method="post" action="${input.action}">
<input type="hidden" name="csrf" value="${input.csrfToken}">
<input type="hidden" name="step" value="consent">
<div class="actions">
<button type="submit" name="decision" value="deny">Deny</button>
<button class="primary" type="submit" name="decision" value="approve">Approve</button>
</div>
</form>`;
}
