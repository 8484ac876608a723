import { OAuthError } from '../../core/errors.js';
import { readText, singleValued, type Params } from './params.js';

/**
 * A form posted from one of our pages (sign-in, consent, device code). A person submitted our own
 * form, so whatever is wrong with the body (too large, not UTF-8, a repeated field) is one 400
 * page saying what; no program reads the status.
 */
export async function readPageForm(request: Request, maxBytes: number): Promise<Params> {
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new OAuthError('invalid_request', 'the form must be application/x-www-form-urlencoded').withUserMessage('Unexpected form encoding.');
  }
  try {
    return singleValued(new URLSearchParams(await readText(request, maxBytes)));
  } catch (error) {
    if (error instanceof OAuthError) throw new OAuthError('invalid_request', error.description);
    throw new OAuthError('invalid_request', 'the form body could not be read').withUserMessage('Malformed form.');
  }
}
