import { hash } from 'node:crypto';
import {
  isSupportedJwsAlgorithm,
  jwtHeaderProblem,
  jwtTimeProblem,
  parseCompactJwt,
  verifyJwtSignature,
  type CompactJwt,
  type JwtVerificationKey,
} from '../../core/jwt.js';
import { fail, ok, type Defect, type Result } from '../../core/result.js';
import type { Store } from '../../store/store.js';

/**
 * JWT assertions presented to the token endpoint (RFC 7521 §5.2, RFC 7523 §3): a client's
 * assertion of its own identity (private_key_jwt), or an authorization grant signed by an issuer
 * the operator trusts (an ID-JAG, a workload token). Each check that fails says which defect it
 * found, in words of our own: the assertion's content is never echoed back.
 */

/**
 * What a check found wrong with an assertion. `keys_unavailable` is not the assertion's fault:
 * its issuer's keys could not be had, maybe not for long (`log` says why, for the log only).
 */
export type AssertionDefectCode = 'malformed' | 'algorithm' | 'header' | 'claims' | 'audience' | 'time' | 'key' | 'signature' | 'replayed' | 'keys_unavailable';

export interface AssertionDefect extends Defect<AssertionDefectCode> {
  log?: Record<string, string>;
}

/** A check of an assertion: its value, or the defect found. */
export type AssertionCheck<T> = Result<T, AssertionDefect>;

export function assertionDefect(code: AssertionDefectCode, description: string): { ok: false; defect: AssertionDefect } {
  return fail({ code, description });
}

/** The key for a header's `alg` and `kid`, why none matches, or why none could be had. */
export type AssertionKeyLookup = { key: JwtVerificationKey } | { problem: 'unknown' | 'ambiguous' } | { defect: AssertionDefect };

/** Finds the key for a header's `alg` and `kid` among the issuer's keys. */
export type AssertionKeys = (alg: string, kid: string | undefined) => AssertionKeyLookup | Promise<AssertionKeyLookup>;

export interface AssertionRules {
  /** How descriptions name the assertion: 'client assertion', 'authorization grant'… */
  name: string;
  /** The `typ` the header must carry (an ID-JAG's `oauth-id-jag+jwt`); unchecked when absent. */
  typ?: string;
  /**
   * The `aud` values that name us: the assertion's `aud` must be one of them, and never a list that
   * names anyone else beside us (whoever else it names could present it here: audience injection).
   */
  audiences: readonly string[];
  /** Whether `aud` may be a JSON array of such values; when false it must be a single string (a client's assertion, RFC 7523bis). */
  audienceList: boolean;
  /** What a refusal says `aud` must be, e.g. 'the issuer identifier https://…': nothing is said when absent. */
  expectedAudience?: string;
  /** The longest time an assertion may still have to live, from now, and from its iat to its exp. */
  maxLifetimeSeconds: number;
  /** Allowed clock difference for exp, nbf and iat. */
  clockToleranceSeconds: number;
  /** Whether `iat` must be present (an ID-JAG's is REQUIRED). */
  requireIat?: boolean;
  /** Whether `jti` may be absent (a platform's workload token may have none). Default false. */
  jtiOptional?: boolean;
}

export interface VerifiedAssertion {
  header: Record<string, unknown>;
  claims: Record<string, unknown>;
  iss: string;
  sub: string;
  /** '' when absent, which only `jtiOptional` allows. */
  jti: string;
  exp: number;
}

/** The assertion's parts, not yet trusted: what a caller reads `iss` from to choose whose keys verify it. */
export function readAssertion(token: string, name: string): AssertionCheck<CompactJwt> {
  const jwt = parseCompactJwt(token);
  if (jwt) return ok(jwt);
  // An unsigned JWT (alg none) ends with an empty signature, which no signed one has.
  if (/^[\w-]+\.[\w-]+\.$/.test(token)) return assertionDefect('algorithm', `the ${name} is unsigned (alg none is never accepted)`);
  return assertionDefect('malformed', `the ${name} is not a signed JWT in compact form`);
}

/** The checks of RFC 7523 §3 and RFC 8725, in an order that contacts nobody for a token that fails on its face. */
export async function verifyAssertion(jwt: CompactJwt, keys: AssertionKeys, rules: AssertionRules, now: number): Promise<AssertionCheck<VerifiedAssertion>> {
  const { header, claims } = jwt;
  const { name } = rules;
  if (!isSupportedJwsAlgorithm(header.alg)) {
    return assertionDefect('algorithm', `the ${name} is signed with an algorithm that is not accepted (none and HMAC never are)`);
  }
  const headerProblem = jwtHeaderProblem(header, rules.typ === undefined ? {} : { typ: rules.typ });
  if (headerProblem) return assertionDefect('header', `the ${name}'s header is not accepted: ${headerProblem}`);
  if (typeof claims.iss !== 'string' || claims.iss === '') return assertionDefect('claims', `the ${name} has no iss`);
  if (typeof claims.sub !== 'string' || claims.sub === '') return assertionDefect('claims', `the ${name} has no sub`);
  const jtiAbsent = claims.jti === undefined && rules.jtiOptional === true;
  if (!jtiAbsent && (typeof claims.jti !== 'string' || claims.jti === '')) return assertionDefect('claims', `the ${name} has no jti`);
  const audience = audienceProblem(claims.aud, rules);
  if (audience) return assertionDefect('audience', audience);
  const times = timesDefect(claims, rules, now);
  if (times) return fail(times);

  const found = await keys(header.alg, header.kid as string | undefined);
  if ('defect' in found) return fail(found.defect);
  if ('problem' in found) {
    return assertionDefect(
      'key',
      found.problem === 'unknown'
        ? `no key of the ${name}'s issuer matches its kid and alg`
        : `several keys of the ${name}'s issuer match it; it must name one by kid`,
    );
  }
  if (!verifyJwtSignature(jwt, found.key)) return assertionDefect('signature', `the ${name}'s signature does not verify`);
  return ok({ header, claims, iss: claims.iss, sub: claims.sub, jti: jtiAbsent ? '' : (claims.jti as string), exp: claims.exp as number });
}

/**
 * Why `aud` does not name us alone, or null. A list that names another party beside us is refused
 * even where lists are accepted: that party, or anyone it hands the assertion to, could present
 * it here (the audience injection draft-ietf-oauth-rfc7523bis closes).
 */
function audienceProblem(aud: unknown, rules: AssertionRules): string | null {
  const { name, audiences } = rules;
  const ours = (value: unknown): boolean => typeof value === 'string' && audiences.includes(value);
  const notUs = `the ${name}'s aud does not name this authorization server${rules.expectedAudience ? `: it must be ${rules.expectedAudience}` : ''}`;
  if (typeof aud === 'string') return ours(aud) ? null : notUs;
  if (!Array.isArray(aud) || aud.length === 0) return `the ${name} has no aud`;
  if (!aud.some(ours)) return notUs;
  if (!rules.audienceList) return `the ${name}'s aud must be a single string, not a list${rules.expectedAudience ? `: ${rules.expectedAudience}` : ''}`;
  if (!aud.every(ours)) return `the ${name}'s aud names another audience beside this authorization server; it must name this one alone`;
  return null;
}

function timesDefect(claims: Record<string, unknown>, rules: AssertionRules, now: number): AssertionDefect | undefined {
  const { name, clockToleranceSeconds: tolerance } = rules;
  const defect = (code: 'claims' | 'time', description: string): AssertionDefect => ({ code, description });
  if (claims.exp === undefined) return defect('claims', `the ${name} has no exp`);
  const problem = jwtTimeProblem(claims, now, tolerance);
  if (problem === 'malformed') return defect('claims', `the ${name}'s exp, nbf or iat is not a number`);
  if (problem === 'expired') return defect('time', `the ${name} has expired`);
  if (problem === 'not yet valid') return defect('time', `the ${name} is not valid yet (nbf)`);
  const exp = claims.exp as number;
  const iat = claims.iat as number | undefined;
  if (iat === undefined && rules.requireIat) return defect('claims', `the ${name} has no iat`);
  if (iat !== undefined && iat > now + tolerance) return defect('time', `the ${name} was issued in the future (iat)`);
  // A bounded lifetime keeps the record of used jti values bounded too (RFC 7523 §3, item 4).
  if (exp - now > rules.maxLifetimeSeconds + tolerance || (iat !== undefined && exp - iat > rules.maxLifetimeSeconds + tolerance)) {
    return defect('time', `the ${name} lives too long: at most ${rules.maxLifetimeSeconds} seconds are accepted`);
  }
  return undefined;
}

/**
 * Spends the assertion's `jti` (RFC 7523 §3, item 7): recorded in the store by a hash of issuer
 * and jti until the assertion expires, so a second presentation is refused on every replica. One
 * store round trip.
 */
export async function spendAssertion(
  store: Store,
  assertion: VerifiedAssertion,
  name: string,
  now: number,
  clockToleranceSeconds: number,
): Promise<AssertionCheck<VerifiedAssertion>> {
  const key = hash('sha256', `${assertion.iss}\n${assertion.jti}`, 'base64url');
  const first = await store.useAssertionId(key, assertion.exp + clockToleranceSeconds, now);
  return first ? ok(assertion) : assertionDefect('replayed', `the ${name} was used before (its jti was seen already)`);
}
