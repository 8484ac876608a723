import { hash } from 'node:crypto';
import { isSupportedJwsAlgorithm, jwtHeaderProblem, jwtTimeProblem, parseCompactJwt, verifyJwtSignature, type CompactJwt } from '../../core/jwt.js';
import { KeySetUnavailableError, type KeyLookup } from '../../core/remote-key-set.js';
import type { Store } from '../../store/store.js';

/**
 * JWT assertions presented to the token endpoint (RFC 7521 §5.2, RFC 7523 §3): a client's
 * assertion of its own identity (private_key_jwt), or an authorization grant signed by an issuer
 * the operator trusts (an ID-JAG, a workload token). Each check that fails says which defect it
 * found, in words of our own: the assertion's content is never echoed back.
 */

/** What a check found wrong; `message` is safe to return as an error_description. */
export class AssertionDefect extends Error {
  constructor(
    message: string,
    /** True when the issuer's keys could not be had: not the assertion's fault, maybe not for long. */
    readonly keysUnavailable = false,
  ) {
    super(message);
    this.name = 'AssertionDefect';
  }
}

/** Finds the key for a header's `alg` and `kid` among the issuer's keys. */
export type AssertionKeys = (alg: string, kid: string | undefined) => KeyLookup | Promise<KeyLookup>;

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
export function readAssertion(token: string, name: string): CompactJwt {
  const jwt = parseCompactJwt(token);
  if (jwt) return jwt;
  // An unsigned JWT (alg none) ends with an empty signature, which no signed one has.
  if (/^[\w-]+\.[\w-]+\.$/.test(token)) throw new AssertionDefect(`the ${name} is unsigned (alg none is never accepted)`);
  throw new AssertionDefect(`the ${name} is not a signed JWT in compact form`);
}

/** The checks of RFC 7523 §3 and RFC 8725, in an order that contacts nobody for a token that fails on its face. */
export async function verifyAssertion(jwt: CompactJwt, keys: AssertionKeys, rules: AssertionRules, now: number): Promise<VerifiedAssertion> {
  const { header, claims } = jwt;
  const { name } = rules;
  if (!isSupportedJwsAlgorithm(header.alg)) {
    throw new AssertionDefect(`the ${name} is signed with an algorithm that is not accepted (none and HMAC never are)`);
  }
  const headerProblem = jwtHeaderProblem(header, rules.typ === undefined ? {} : { typ: rules.typ });
  if (headerProblem) throw new AssertionDefect(`the ${name}'s header is not accepted: ${headerProblem}`);
  if (typeof claims.iss !== 'string' || claims.iss === '') throw new AssertionDefect(`the ${name} has no iss`);
  if (typeof claims.sub !== 'string' || claims.sub === '') throw new AssertionDefect(`the ${name} has no sub`);
  const jtiAbsent = claims.jti === undefined && rules.jtiOptional === true;
  if (!jtiAbsent && (typeof claims.jti !== 'string' || claims.jti === '')) throw new AssertionDefect(`the ${name} has no jti`);
  const audience = audienceProblem(claims.aud, rules);
  if (audience) throw new AssertionDefect(audience);
  checkTimes(claims, rules, now);

  let found: KeyLookup;
  try {
    found = await keys(header.alg, header.kid as string | undefined);
  } catch (error) {
    if (error instanceof KeySetUnavailableError || error instanceof AssertionDefect) {
      throw error instanceof AssertionDefect ? error : new AssertionDefect(`the keys that verify the ${name} could not be fetched`, true);
    }
    throw error;
  }
  if ('problem' in found) {
    throw new AssertionDefect(
      found.problem === 'unknown' ? `no key of the ${name}'s issuer matches its kid and alg` : `several keys of the ${name}'s issuer match it; it must name one by kid`,
    );
  }
  if (!verifyJwtSignature(jwt, found.key)) throw new AssertionDefect(`the ${name}'s signature does not verify`);
  return { header, claims, iss: claims.iss, sub: claims.sub, jti: jtiAbsent ? '' : (claims.jti as string), exp: claims.exp as number };
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

function checkTimes(claims: Record<string, unknown>, rules: AssertionRules, now: number): void {
  const { name, clockToleranceSeconds: tolerance } = rules;
  if (claims.exp === undefined) throw new AssertionDefect(`the ${name} has no exp`);
  const problem = jwtTimeProblem(claims, now, tolerance);
  if (problem === 'malformed') throw new AssertionDefect(`the ${name}'s exp, nbf or iat is not a number`);
  if (problem === 'expired') throw new AssertionDefect(`the ${name} has expired`);
  if (problem === 'not yet valid') throw new AssertionDefect(`the ${name} is not valid yet (nbf)`);
  const exp = claims.exp as number;
  const iat = claims.iat as number | undefined;
  if (iat === undefined && rules.requireIat) throw new AssertionDefect(`the ${name} has no iat`);
  if (iat !== undefined && iat > now + tolerance) throw new AssertionDefect(`the ${name} was issued in the future (iat)`);
  // A bounded lifetime keeps the record of used jti values bounded too (RFC 7523 §3, item 4).
  if (exp - now > rules.maxLifetimeSeconds + tolerance || (iat !== undefined && exp - iat > rules.maxLifetimeSeconds + tolerance)) {
    throw new AssertionDefect(`the ${name} lives too long: at most ${rules.maxLifetimeSeconds} seconds are accepted`);
  }
}

/**
 * Spends the assertion's `jti` (RFC 7523 §3, item 7): recorded in the store by a hash of issuer
 * and jti until the assertion expires, so a second presentation is refused on every replica. One
 * store round trip.
 */
export async function spendAssertion(store: Store, assertion: VerifiedAssertion, name: string, now: number, clockToleranceSeconds: number): Promise<void> {
  const key = hash('sha256', `${assertion.iss}\n${assertion.jti}`, 'base64url');
  const first = await store.useAssertionId(key, assertion.exp + clockToleranceSeconds, now);
  if (!first) throw new AssertionDefect(`the ${name} was used before (its jti was seen already)`);
}
