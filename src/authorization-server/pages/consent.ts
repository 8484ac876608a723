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
  scopes: string[];
  resource: string;
  formTargets: string[];
}

/**
 * The consent form: names the client, where it will be sent back to, the scopes and the resource.
 * Contract: a submit button `name="decision"` with value `approve` or `deny`.
 */
export function consentPage(input: ConsentPageInput): Page {
  return page(
    'Authorize access',
    html`<h1>Authorize ${input.clientName}?</h1>
${input.clientHost ? html`<p class="site">Verified: this application is published by <strong>${token(input.clientHost)}</strong>, where its description (and its name) came from. Approve only if you trust that site.</p>` : ''}
${input.clientNameUnverified ? html`<p class="site unverified">Unverified name: whoever registered this application chose it, and anyone can register any name. Approve only if you started it yourself.</p>` : ''}
${
      input.username !== undefined
        ? html`<p class="muted">Signed in as <strong>${input.username}</strong></p>`
        : html`<p class="muted">Next you sign in with <strong>${input.upstreamName ?? ''}</strong></p>`
    }
<dl>
<dt>Application</dt><dd>${input.clientName}${input.clientNameUnverified ? html` <span class="tag">unverified</span>` : ''}<br><span class="muted">${token(input.clientId)}</span></dd>
<dt>Returns to</dt><dd>${token(input.redirectHost)}</dd>
<dt>Server</dt><dd>${token(input.resource)}</dd>
<dt>Access</dt><dd>${
      input.scopes.length > 0
        ? html`<ul class="scopes">${input.scopes.map((scope) => html`<li><code>${scope}</code></li>`)}</ul>`
        : html`<span class="muted">no scopes</span>`
    }</dd>
</dl>
<p class="muted">Only approve applications you started yourself. You can revoke this later.</p>
<form method="post" action="${input.action}">
<input type="hidden" name="csrf" value="${input.csrfToken}">
<input type="hidden" name="step" value="consent">
<div class="actions">
<button type="submit" name="decision" value="deny">Deny</button>
<button class="primary" type="submit" name="decision" value="approve">Approve</button>
</div>
</form>`,
    { formTargets: input.formTargets },
  );
}
