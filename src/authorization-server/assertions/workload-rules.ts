/**
 * Workload identity federation: which platform tokens (a Kubernetes service account's projected
 * token, a SPIFFE JWT-SVID) the operator accepts as a jwt-bearer grant, and as which client. Each
 * rule names an issuer, the audience its tokens must carry, a subject (exact, or a pattern with
 * `*`), the client the workload acts as and the scopes it may have. Checked when the server is
 * made, so a rule that can never match stops it then, not at the first request.
 */
import { isStorableText } from '../../core/storable-text.js';
import { isDocumentClientId } from '../client-documents/documents.js';

export interface WorkloadRuleOptions {
  /** The platform's token issuer, exactly as its tokens' `iss` (https; its keys are found through OpenID Connect Discovery). */
  issuer: string;
  /** The `aud` its tokens must carry for us. Default: our issuer. */
  audience?: string;
  /** The token's `sub`, exactly, or a pattern where `*` stands for any run of characters (`system:serviceaccount:billing:*`). */
  subject: string;
  /** The client the workload acts as: created at start when it does not exist. */
  client: string;
  /** The client's display name when it is created. Default: the client id. */
  name?: string;
  /** Scopes the workload may have; a request naming none gets all of them. */
  scopes: string[];
  /**
   * Whether a token with a `jti` is accepted once only (RFC 7523 §3). Default true. A platform
   * that mounts one token and has the workload reuse it until it is renewed (Kubernetes' kubelet)
   * needs false: the token is then accepted again for as long as it is valid.
   */
  singleUse?: boolean;
}

export interface WorkloadRule {
  issuer: string;
  audience: string;
  subject: string;
  client: string;
  name: string;
  scopes: string[];
  singleUse: boolean;
}

const CLIENT_ID = /^[A-Za-z0-9._:-]{1,100}$/;

/** Whether `subject` is the rule's, or fits its pattern (`*`: one or more characters; everything else literal). */
export function subjectMatches(pattern: string, subject: string): boolean {
  if (!pattern.includes('*')) return subject === pattern;
  const parts = pattern.split('*');
  // Literal pieces in order, each `*` taking at least one character: no regular expression, so no backtracking to exploit.
  if (!subject.startsWith(parts[0]!)) return false;
  let at = parts[0]!.length;
  for (let i = 1; i < parts.length; i++) {
    const part = parts[i]!;
    const last = i === parts.length - 1;
    const found = last ? subject.length - part.length : subject.indexOf(part, at + 1);
    if (found < at + 1 || (last && !subject.endsWith(part))) return false;
    at = found + part.length;
  }
  return true;
}

/** Checks an issuer URL of ours to trust: https (http://127.0.0.1 only for tests), no query, fragment or credentials. */
export function checkTrustedIssuer(issuer: unknown, where: string, allowLoopbackHttp: boolean): string {
  if (typeof issuer !== 'string' || !URL.canParse(issuer)) throw new Error(`${where} must be an absolute https URL`);
  const url = new URL(issuer);
  const testHttp = allowLoopbackHttp && url.protocol === 'http:' && url.hostname === '127.0.0.1';
  if (url.protocol !== 'https:' && !testHttp) {
    throw new Error(
      `${where} must be an https URL${url.protocol === 'http:' && url.hostname === '127.0.0.1' ? ' (http://127.0.0.1 only with the insecure switch, for tests)' : ''}: ${issuer}`,
    );
  }
  if (url.search || url.hash || issuer.includes('?') || issuer.includes('#')) throw new Error(`${where} must have no query or fragment: ${issuer}`);
  if (url.username || url.password) throw new Error(`${where} must not contain credentials`);
  return issuer;
}

/** Resolves and checks the rules; `issuer` is ours (the default audience). Throws naming the rule and field. */
export function resolveWorkloadRules(
  rules: unknown,
  context: { issuer: string; scopesSupported: readonly string[]; allowLoopbackHttp: boolean },
): WorkloadRule[] {
  if (!Array.isArray(rules)) throw new Error('workloads must be a list of rules');
  const seen = new Set<string>();
  const clients = new Map<string, string>();
  return rules.map((raw: unknown, index) => {
    const where = `workloads[${index}]`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`${where} must be an object`);
    const rule = raw as Record<string, unknown>;
    const known = ['issuer', 'audience', 'subject', 'client', 'name', 'scopes', 'singleUse'];
    const unknown = Object.keys(rule).find((key) => !known.includes(key));
    if (unknown !== undefined) throw new Error(`${where} has an unknown field ${JSON.stringify(unknown)} (known: ${known.join(', ')})`);
    if (rule.issuer === undefined) throw new Error(`${where}.issuer is missing`);
    const issuer = checkTrustedIssuer(rule.issuer, `${where}.issuer`, context.allowLoopbackHttp);
    const audience = rule.audience ?? context.issuer;
    if (typeof audience !== 'string' || audience === '' || !isStorableText(audience)) throw new Error(`${where}.audience must be a non-empty string`);
    const subject = rule.subject;
    if (typeof subject !== 'string' || subject === '' || !isStorableText(subject))
      throw new Error(`${where}.subject must be a non-empty string (exact, or with * for any characters)`);
    if (subject.replace(/\*/g, '') === '') throw new Error(`${where}.subject must not match every subject: name at least part of it`);
    const client = rule.client;
    if (typeof client !== 'string' || !CLIENT_ID.test(client) || isDocumentClientId(client)) {
      throw new Error(`${where}.client must be a client id of letters, digits and . _ : - (at most 100)`);
    }
    const name = rule.name ?? client;
    if (typeof name !== 'string' || name.trim() === '' || name.length > 200 || !isStorableText(name))
      throw new Error(`${where}.name must be a non-empty string of at most 200 characters`);
    const scopes = rule.scopes;
    if (!Array.isArray(scopes) || scopes.length === 0 || !scopes.every((scope) => typeof scope === 'string')) {
      throw new Error(`${where}.scopes must be a non-empty list of scopes`);
    }
    const unsupported = scopes.find((scope) => !context.scopesSupported.includes(scope));
    if (unsupported !== undefined) throw new Error(`${where}.scopes names ${unsupported}, which this server does not support`);
    const singleUse = rule.singleUse ?? true;
    if (typeof singleUse !== 'boolean') throw new Error(`${where}.singleUse must be true or false`);
    const key = JSON.stringify([issuer, audience, subject]);
    if (seen.has(key)) throw new Error(`${where} repeats the issuer, audience and subject of an earlier rule`);
    seen.add(key);
    const clientName = clients.get(client);
    if (clientName !== undefined && clientName !== name) throw new Error(`${where} gives client ${client} another name than an earlier rule`);
    clients.set(client, name);
    return { issuer, audience, subject, client, name, scopes: [...new Set(scopes as string[])].sort(), singleUse };
  });
}
