/**
 * The anti-CSRF token of the forms outside any interaction (/account, /admin, /device): a MAC
 * under a key only the server has (derived from its signing keys), over the page and whom the
 * form is for — the session signed in, or before anyone is, this browser's binding. Nobody can
 * compute one from a cookie they know or planted, and a token from one page, one session or one
 * browser is worth nothing on another. The interaction pages keep their own random token.
 */
import { createHmac } from 'node:crypto';
import { OAuthError } from '../core/errors.js';
import { hashSecret, safeEqual } from '../core/secrets.js';
import type { SessionRecord } from '../store/store.js';
import type { SigningKeys } from './keys.js';

export type FormPage = 'account' | 'admin' | 'device';

/** Whom a form is for: a session (by its id's hash, which the store keeps), or a browser's binding cookie. */
export type FormHolder = { session: SessionRecord } | { binding: string };

/** The label the token key is derived under from the signing keys (SigningKeys.macKeys). */
const FORM_KEY_LABEL = 'context-auth page form tokens';

/**
 * The token to put in the page's forms, made with the current key. With `bound`, it vouches for
 * that value too (a notice or a pending change carried in a URL): a different value, never a
 * form's token.
 */
export async function formToken(ctx: { keys: SigningKeys }, page: FormPage, holder: FormHolder, bound?: string): Promise<string> {
  return mac((await keysOf(ctx))[0]!, page, holder, bound);
}

/** Whether `token` is this page's for `holder` (and `bound`) under any published key: a rotation does not break a form left open. */
export async function isFormToken(ctx: { keys: SigningKeys }, page: FormPage, holder: FormHolder, token: string, bound?: string): Promise<boolean> {
  let valid = false;
  for (const key of await keysOf(ctx)) if (safeEqual(token, mac(key, page, holder, bound))) valid = true;
  return valid;
}

/** The refusal of a form whose token is missing, another page's, another session's or another browser's. */
export function refusedFormToken(): OAuthError {
  return new OAuthError('invalid_request', 'the csrf token does not match this page and this browser or session', 403).withUserMessage(
    'The form could not be verified. Reload the page and try again.',
  );
}

async function keysOf(ctx: { keys: SigningKeys }): Promise<readonly Buffer[]> {
  return ctx.keys.macKeysIfCached(FORM_KEY_LABEL) ?? ctx.keys.macKeys(FORM_KEY_LABEL);
}

function mac(key: Buffer, page: FormPage, holder: FormHolder, bound: string | undefined): string {
  const whom = 'session' in holder ? `session ${holder.session.idHash}` : `browser ${hashSecret(holder.binding)}`;
  // `whom` holds no line break, so a bound value (after one) cannot pass for another holder's.
  return createHmac('sha256', key)
    .update(`${page}\n${whom}${bound === undefined ? '' : `\n${bound}`}`)
    .digest('base64url');
}
