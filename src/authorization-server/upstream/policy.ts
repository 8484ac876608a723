/**
 * Who may sign in through an upstream provider. With no rule set, anyone the provider signs in
 * may; each rule narrows that. Domain and email rules trust only an email the provider verified.
 */
import type { UpstreamIdentity } from './provider.js';

export interface UpstreamSignInPolicy {
  /** Email domains allowed, e.g. ['example.com'] (exact match, case-insensitive). */
  allowDomains?: string[];
  /** Email addresses allowed (case-insensitive). */
  allowEmails?: string[];
  /** A check of your own; return false to refuse. Runs after the lists (both must pass). */
  allow?: (identity: UpstreamIdentity & { provider: string }) => boolean | Promise<boolean>;
}

/** Null when the person may sign in; otherwise the reason, fit to show them. */
export async function refusalOf(identity: UpstreamIdentity, provider: string, policy: UpstreamSignInPolicy): Promise<string | null> {
  const domains = (policy.allowDomains ?? []).map((d) => d.toLowerCase());
  const emails = (policy.allowEmails ?? []).map((e) => e.toLowerCase());
  if (domains.length > 0 || emails.length > 0) {
    const email = identity.emailVerified && identity.email ? identity.email.toLowerCase() : null;
    if (!email) return 'Your account at the identity provider has no verified email address, which this server requires.';
    const domain = email.slice(email.lastIndexOf('@') + 1);
    if (!emails.includes(email) && !domains.includes(domain)) return `${identity.email} is not allowed to sign in to this server.`;
  }
  if (policy.allow && !(await policy.allow({ ...identity, provider }))) return 'Your account is not allowed to sign in to this server.';
  return null;
}
