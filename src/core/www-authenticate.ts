/**
 * The `WWW-Authenticate` header: built by resource servers (RFC 6750 §3, RFC 9728 §5.1) and
 * parsed by clients (spec: "Clients MUST be able to parse WWW-Authenticate and react to 401").
 */

export interface BearerChallenge {
  /** RFC 9728: where the protected resource metadata is. */
  resourceMetadata?: string;
  error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope';
  errorDescription?: string;
  /** Space-separated scopes the resource needs. */
  scope?: string;
  realm?: string;
}

/**
 * Quotes a parameter value (RFC 9110 quoted-string): backslash-escape `"` and `\`, drop controls,
 * and turn non-ASCII into `?` (RFC 6750 §3 allows ASCII only; Headers and node:http would throw).
 */
function quote(value: string): string {
  // eslint-disable-next-line no-control-regex -- header values must not carry control characters
  const safe = value.replace(/[\u0000-\u001f\u007f]/g, '').replace(/[^\u0000-\u007f]/gu, '?');
  return `"${safe.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

export function bearerChallenge(challenge: BearerChallenge): string {
  const params: string[] = [];
  if (challenge.realm !== undefined) params.push(`realm=${quote(challenge.realm)}`);
  if (challenge.resourceMetadata !== undefined) params.push(`resource_metadata=${quote(challenge.resourceMetadata)}`);
  if (challenge.error !== undefined) params.push(`error=${quote(challenge.error)}`);
  if (challenge.errorDescription !== undefined) params.push(`error_description=${quote(challenge.errorDescription)}`);
  if (challenge.scope !== undefined && challenge.scope !== '') params.push(`scope=${quote(challenge.scope)}`);
  return params.length > 0 ? `Bearer ${params.join(', ')}` : 'Bearer';
}

export interface DpopChallenge {
  /** RFC 9449 §7.1: the proof algorithms accepted, space-separated in the header. */
  algs: readonly string[];
  /** RFC 9728: where the protected resource metadata is. */
  resourceMetadata?: string;
  error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope' | 'invalid_dpop_proof' | 'use_dpop_nonce';
  errorDescription?: string;
  scope?: string;
}

/** The DPoP challenge (RFC 9449 §7.1): the error first, as in the RFC's examples, then `algs`. */
export function dpopChallenge(challenge: DpopChallenge): string {
  const params: string[] = [];
  if (challenge.error !== undefined) params.push(`error=${quote(challenge.error)}`);
  if (challenge.errorDescription !== undefined) params.push(`error_description=${quote(challenge.errorDescription)}`);
  if (challenge.scope !== undefined && challenge.scope !== '') params.push(`scope=${quote(challenge.scope)}`);
  params.push(`algs=${quote(challenge.algs.join(' '))}`);
  if (challenge.resourceMetadata !== undefined) params.push(`resource_metadata=${quote(challenge.resourceMetadata)}`);
  return `DPoP ${params.join(', ')}`;
}

export interface ParsedChallenge {
  /** Lower-cased auth scheme, e.g. "bearer". */
  scheme: string;
  /** Parameters with lower-cased names; values unquoted. */
  params: Record<string, string>;
  /** A token68 value (e.g. `Negotiate abc==`), if the challenge has one instead of parameters. */
  token68?: string;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+/;

/**
 * Parses a WWW-Authenticate value into its challenges (RFC 9110 §11.6.1): several challenges may
 * share one header, separated by commas, and parameter values may be tokens or quoted strings.
 */
export function parseWwwAuthenticate(header: string): ParsedChallenge[] {
  const challenges: ParsedChallenge[] = [];
  let rest = header;
  const skip = (pattern: RegExp) => {
    rest = rest.replace(pattern, '');
  };
  let current: ParsedChallenge | undefined;
  while (rest.length > 0) {
    skip(/^[\s,]+/);
    if (rest.length === 0) break;
    const name = TOKEN.exec(rest)?.[0];
    if (!name) break; // not parseable from here on: keep what we have
    const afterName = rest.slice(name.length);
    // `name=value` is a parameter of the current challenge; `name==` at the end is token68 padding.
    const isParam = /^\s*=/.test(afterName) && !/^=+\s*(,|$)/.test(afterName);
    if (current && isParam) {
      rest = afterName.replace(/^\s*=\s*/, '');
      let value: string;
      if (rest.startsWith('"')) {
        let i = 1;
        value = '';
        while (i < rest.length && rest[i] !== '"') {
          if (rest[i] === '\\' && i + 1 < rest.length) i++;
          value += rest[i];
          i++;
        }
        rest = rest.slice(i + 1);
      } else {
        value = /^[^,\s]*/.exec(rest)![0];
        rest = rest.slice(value.length);
      }
      current.params[name.toLowerCase()] = value;
      continue;
    }
    current = { scheme: name.toLowerCase(), params: {} };
    challenges.push(current);
    rest = afterName;
    const token68 = /^\s+([A-Za-z0-9\-._~+/]+=*)\s*(,|$)/.exec(rest);
    // `abc=, Next …` is token68 with one padding character, not a parameter: a parameter's value is never empty.
    if (token68 && !/^\s+[!#$%&'*+\-.^_`|~0-9A-Za-z]+\s*=\s*[^=,\s]/.test(rest)) {
      current.token68 = token68[1]!;
      rest = rest.slice(token68[0].length);
    }
  }
  return challenges;
}

/** The parameters of the header's challenge in `scheme` (lower case), if it has one. */
export function findChallenge(header: string | null | undefined, scheme: string): Record<string, string> | undefined {
  if (!header) return undefined;
  return parseWwwAuthenticate(header).find((challenge) => challenge.scheme === scheme)?.params;
}

/** The Bearer challenge's parameters, if the header has one. */
export function findBearerChallenge(header: string | null | undefined): Record<string, string> | undefined {
  return findChallenge(header, 'bearer');
}
