import { addressBucket } from '../../core/client-address.js';
import { OAuthError } from '../../core/errors.js';
import { refuseDuplicatedCookies } from '../browser-cookies.js';
import type { BaseServices } from '../services.js';
import { singleValued, unreadableBody, type Params } from './params.js';
import { FORM, mediaTypeOf, type EndpointRequest } from './request.js';

/**
 * A form posted from one of our pages (sign-in, consent, device code, account, console): the one
 * place such a form is read. Before its body, the request must come from our own pages (its
 * Origin, else its Sec-Fetch-Site) and carry each of our cookies at most once; each refusal is a
 * 403 page saying why. A person submitted our own form, so whatever is wrong with the body (too
 * large, not UTF-8, a repeated field) is one 400 page saying what; no program reads the status.
 */
export function readPageForm(ctx: BaseServices, request: EndpointRequest): Params {
  refuseCrossSite(ctx, request);
  refuseDuplicatedCookies(ctx, request);
  const { body } = request;
  if (mediaTypeOf(request.headers.contentType) !== FORM) {
    throw new OAuthError('invalid_request', 'the form must be application/x-www-form-urlencoded').withUserMessage('Unexpected form encoding.');
  }
  try {
    if (body.kind === 'unreadable') throw unreadableBody(body.defect, ctx.config.maxBodyBytes);
    if (body.kind !== 'form') throw new OAuthError('invalid_request', 'the form body could not be read');
    return singleValued(body.fields);
  } catch (error) {
    if (error instanceof OAuthError) throw new OAuthError('invalid_request', error.description);
    throw new OAuthError('invalid_request', 'the form body could not be read').withUserMessage('Malformed form.');
  }
}

/** Sec-Fetch-Site values of a request our own page made (or the person typed): any other is another site's. */
const OUR_FETCH_SITES = new Set(['same-origin', 'none']);

/**
 * Refuses a post that a browser says came from another origin: an `Origin` other than the
 * issuer's (compared with the issuer, never with the request's URL, which differs behind a proxy),
 * `null` included; without `Origin`, a `Sec-Fetch-Site` other than same-origin or none. A sibling
 * subdomain is another origin too. With neither header (curl, an old browser) the form's token
 * still holds.
 */
function refuseCrossSite(ctx: BaseServices, request: EndpointRequest): void {
  const { origin, secFetchSite: fetchSite } = request.headers;
  const ours = new URL(ctx.config.issuer).origin;
  let description: string;
  if (origin !== null) {
    if (origin === ours) return;
    description = origin === 'null' ? 'the form came from a page with no origin (Origin: null)' : `the form's Origin is not ${ours}`;
  } else if (fetchSite !== null && !OUR_FETCH_SITES.has(fetchSite)) {
    description = `the form came from another site (Sec-Fetch-Site: ${fetchSite.slice(0, 20)})`;
  } else {
    return;
  }
  const address = request.clientAddress;
  ctx.log({
    event: 'page_form_refused',
    // An interaction's id is a handle on a sign-in under way: the log names the page, not the id.
    path: request.url.pathname.slice(0, 200).replace(/\/interaction\/[^/]*$/, '/interaction/:id'),
    ...(origin !== null ? { origin: origin.slice(0, 100) } : {}),
    ...(fetchSite !== null ? { sec_fetch_site: fetchSite.slice(0, 20) } : {}),
    ...(address === undefined ? {} : { address: addressBucket(address) }),
  });
  throw new OAuthError('invalid_request', description, 403).withUserMessage(
    `This form was sent from another site, so it was not accepted. To do this yourself, open the page at ${ctx.config.issuer} and submit it there.`,
  );
}
