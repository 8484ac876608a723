import { accessRow, applicationRow, clientNotices, decisionForm, revokeLater, type ConsentPageInput } from './consent.js';
import { html, token } from './html.js';
import { page, type Page } from './layout.js';

export interface DeviceCodePageInput {
  action: string;
  csrfToken: string;
  /** What to fill the field with: the code from the link, or what the person typed before. */
  userCode?: string;
  error?: string;
  status?: number;
}

/**
 * The verification page (RFC 8628 §3.3): asks for the code the device shows. A code from the
 * link is only filled in; the person still submits it. Contract: input `user_code`, hidden `csrf`.
 */
export function deviceCodePage(input: DeviceCodePageInput): Page {
  return page(
    'Connect a device',
    html`<h1>Connect a device</h1>
<p class="muted">Enter the code your device shows. Only do this for a device you are setting up yourself.</p>
${input.error ? html`<p class="error" role="alert">${input.error}</p>` : ''}
<form method="post" action="${input.action}">
<input type="hidden" name="csrf" value="${input.csrfToken}">
<label for="user_code">Code</label>
<input id="user_code" class="user-code" name="user_code" type="text" autocomplete="off" autocapitalize="characters" spellcheck="false" required autofocus maxlength="20" placeholder="BCDF-GHJK" value="${input.userCode ?? ''}">
<div class="actions"><button class="primary" type="submit">Continue</button></div>
</form>`,
    { status: input.status ?? 200 },
  );
}

export type DeviceConsentPageInput = Omit<ConsentPageInput, 'redirectHost' | 'redirectScheme' | 'formTargets'> & {
  /** The code the person entered, to compare with the device's; absent when it cannot be shown. */
  userCode?: string;
  formTargets?: string[];
};

/**
 * The consent page of a device authorization: says plainly that a device asks, names the client
 * (with the same warnings as the consent page) and shows the code to compare with the device's.
 * Contract: a submit button `name="decision"` with value `approve` or `deny`.
 */
export function deviceConsentPage(input: DeviceConsentPageInput): Page {
  return page(
    'Connect a device',
    html`<h1>Allow a device to use your account?</h1>
<p>A device is asking for access as <strong>${input.clientName}</strong>. Approve only if you are setting it up yourself and it shows this code:</p>
${input.userCode ? html`<p><span class="user-code">${input.userCode}</span></p>` : ''}
${clientNotices(input)}
<dl>
${applicationRow(input)}
<dt>Server</dt><dd>${token(input.resource)}</dd>
${accessRow(input.scopes)}
</dl>
<p class="muted">If someone sent you a link or a code, deny: they would get access to your account. ${revokeLater(input.accountPath, 'access')}</p>
${decisionForm(input)}`,
    { formTargets: input.formTargets ?? [] },
  );
}

/** What became of the person's decision: approved, denied, or too late (the code was used or expired meanwhile). */
export function deviceDonePage(outcome: 'approved' | 'denied' | 'gone'): Page {
  const content = {
    approved: html`<h1>Device connected</h1>
<p>You can return to your device. It will continue on its own in a few seconds.</p>`,
    denied: html`<h1>Request denied</h1>
<p>The device was not given access. You can close this page.</p>`,
    gone: html`<h1>This code can no longer be used</h1>
<p class="error" role="alert">The code was already used, or it expired. Start again on your device to get a new code.</p>`,
  }[outcome];
  return page('Connect a device', content, { status: outcome === 'gone' ? 410 : 200 });
}
