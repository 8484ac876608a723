import { OAuthError } from '../../core/errors.js';
import { isStorableJson, isStorableText } from '../../core/storable-text.js';
import { readText, requestHeader } from './body.js';

export { readText };

/**
 * Request parameters as a map of single values. OAuth forbids repeating a parameter
 * (RFC 6749 §3.1, §3.2), so a repeat is refused rather than silently taking one of them.
 * Empty values count as absent (RFC 6749 §3.1).
 */
export type Params = Map<string, string>;

export function singleValued(entries: Iterable<[string, string]>, allowRepeated: readonly string[] = []): Params {
  const params: Params = new Map();
  const seen = new Set<string>();
  for (const [key, value] of entries) {
    if (seen.has(key) && !allowRepeated.includes(key)) {
      // RFC 8707 lets `resource` repeat; we bind each token to one server, so say that instead.
      if (key === 'resource') throw new OAuthError('invalid_target', 'name one resource per request; each token is bound to one server');
      throw new OAuthError('invalid_request', `parameter ${key} must not be repeated`);
    }
    seen.add(key);
    if (!isStorableText(key) || !isStorableText(value)) throw unstorable();
    if (value !== '') params.set(key, value);
  }
  return params;
}

/** A parameter holding a NUL character (or an unpaired surrogate): no protocol value does, and no store keeps it as given. */
export function unstorable(): OAuthError {
  return new OAuthError('invalid_request', 'parameters must not contain NUL characters or unpaired surrogates');
}

/** Reads an application/x-www-form-urlencoded body (the only body the token family of endpoints takes). */
export async function readForm(request: Request, maxBytes: number): Promise<Params> {
  const type = (requestHeader(request, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new OAuthError('invalid_request', 'request body must be application/x-www-form-urlencoded');
  }
  const text = await readText(request, maxBytes);
  return singleValued(new URLSearchParams(text));
}

/** Reads a JSON object body (registration). */
export async function readJsonObject(request: Request, maxBytes: number, errorCode: 'invalid_request' | 'invalid_client_metadata'): Promise<Record<string, unknown>> {
  const type = (requestHeader(request, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') throw new OAuthError('invalid_request', 'request body must be application/json');
  const text = await readText(request, maxBytes);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new OAuthError(errorCode, 'request body is not valid JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new OAuthError(errorCode, 'request body must be a JSON object');
  }
  if (!isStorableJson(body)) throw new OAuthError(errorCode, 'request body must not contain NUL characters or unpaired surrogates');
  return body as Record<string, unknown>;
}
