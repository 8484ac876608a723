/**
 * Who may sign in through an upstream provider. With no rule set, anyone the provider signs in
 * may; each rule narrows that. Domain and email rules trust only an email the provider verified;
 * an email domain says nothing of membership in an organisation, which claims such as Entra's
 * `tid` or Google's `hd` do (`requireClaims`).
 */
import type { UpstreamIdentity } from './provider.js';

export interface UpstreamSignInPolicy {
  /** Email domains allowed, e.g. ['example.com'] (exact match, case-insensitive). */
  allowDomains?: string[];
  /** Email addresses allowed (case-insensitive). */
  allowEmails?: string[];
  /**
   * Claims the provider must assert, each with the values allowed (any one of them), e.g.
   * `{ tid: ['<tenant id>'] }` for one Microsoft Entra tenant or `{ hd: ['example.com'] }` for a
   * Google Workspace domain. Read from the validated ID token (OpenID) or the user-info response
   * (plain OAuth 2.0). An absent claim refuses; a claim holding a list passes when one of its values is allowed.
   */
  requireClaims?: Record<string, string[]>;
  /** A check of your own; return false to refuse. Runs after the lists (both must pass). */
  allow?: (identity: UpstreamIdentity & { provider: string }) => boolean | Promise<boolean>;
}

/** Null when the person may sign in; otherwise the reason, for the operator's log (the client is told less). */
export async function refusalOf(identity: UpstreamIdentity, provider: string, policy: UpstreamSignInPolicy): Promise<string | null> {
  const domains = (policy.allowDomains ?? []).map((d) => d.toLowerCase());
  const emails = (policy.allowEmails ?? []).map((e) => e.toLowerCase());
  if (domains.length > 0 || emails.length > 0) {
    const email = identity.emailVerified && identity.email ? identity.email.toLowerCase() : null;
    if (!email) return 'Your account at the identity provider has no verified email address, which this server requires.';
    const domain = email.slice(email.lastIndexOf('@') + 1);
    if (!emails.includes(email) && !domains.includes(domain)) return `${identity.email} is not allowed to sign in to this server.`;
  }
  for (const [claim, allowed] of Object.entries(policy.requireClaims ?? {})) {
    if (!claimValues(identity.claims[claim]).some((value) => allowed.includes(value))) {
      return `The identity provider's "${claim}" claim (${JSON.stringify(identity.claims[claim] ?? null).slice(0, 100)}) is not one this server allows.`;
    }
  }
  if (policy.allow && !(await policy.allow({ ...identity, provider }))) return 'Your account is not allowed to sign in to this server.';
  return null;
}

/** A claim's values as text: a string, number or boolean is one; a list, each of its such items. */
function claimValues(value: unknown): string[] {
  const scalar = (v: unknown): v is string | number | boolean => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
  if (Array.isArray(value)) return value.filter(scalar).map(String);
  return scalar(value) ? [String(value)] : [];
}
