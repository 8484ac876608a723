import { OAuthError } from '../../core/errors.js';
import { isStorableJson, isStorableText } from '../../core/storable-text.js';
import { unreachable } from '../../core/result.js';
import { FORM, JSON_TYPE, mediaTypeOf, type BodyDefect, type EndpointRequest } from './request.js';

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

/** What a body that could not be had answers: 413 past the cap, 400 otherwise. */
export function unreadableBody(defect: BodyDefect, maxBytes: number): OAuthError {
  switch (defect) {
    case 'too_large':
      return new OAuthError('invalid_request', `request body is larger than ${maxBytes} bytes`, 413);
    case 'cut_off':
      return new OAuthError('invalid_request', 'the request body could not be read to its end');
    case 'not_utf8':
      return new OAuthError('invalid_request', 'request body is not valid UTF-8');
    case 'not_json':
      return new OAuthError('invalid_request', 'request body is not valid JSON');
    default:
      return unreachable(defect);
  }
}

/** The fields of an application/x-www-form-urlencoded body, as sent (the only body the token family of endpoints takes). */
export function formFields(request: EndpointRequest, maxBytes: number, wrongType: string): [string, string][] {
  const { body } = request;
  if (mediaTypeOf(request.headers.contentType) !== FORM) throw new OAuthError('invalid_request', wrongType);
  if (body.kind === 'unreadable') throw unreadableBody(body.defect, maxBytes);
  if (body.kind !== 'form') throw new OAuthError('invalid_request', wrongType);
  return body.fields;
}

/** An application/x-www-form-urlencoded body as single-valued parameters. */
export function readForm(request: EndpointRequest, maxBytes: number): Params {
  return singleValued(formFields(request, maxBytes, 'request body must be application/x-www-form-urlencoded'));
}

/** A JSON object body (registration). */
export function readJsonObject(request: EndpointRequest, maxBytes: number, errorCode: 'invalid_request' | 'invalid_client_metadata'): Record<string, unknown> {
  const { body } = request;
  if (mediaTypeOf(request.headers.contentType) !== JSON_TYPE) throw new OAuthError('invalid_request', 'request body must be application/json');
  if (body.kind === 'unreadable') {
    if (body.defect === 'not_json') throw new OAuthError(errorCode, 'request body is not valid JSON');
    throw unreadableBody(body.defect, maxBytes);
  }
  if (body.kind !== 'json') throw new OAuthError('invalid_request', 'request body must be application/json');
  const value = body.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new OAuthError(errorCode, 'request body must be a JSON object');
  }
  if (!isStorableJson(value)) throw new OAuthError(errorCode, 'request body must not contain NUL characters or unpaired surrogates');
  return value as Record<string, unknown>;
}
