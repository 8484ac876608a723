/**
 * The operator's policy for token exchange (RFC 8693), default deny. A delegation rule lets one
 * client, the server of resource `from`, exchange a person's access token for `from` for a token
 * for resource `to`, carrying at most `scopes`. An ID-JAG audience is an authorization server we
 * issue Identity Assertion JWT Authorization Grants for, as the people's identity provider.
 * Checked when the server is made, so a rule that can never match stops it then, not at the first
 * request.
 */
import { canonicalizeResourceUri, normalizeIssuer } from '../../core/uri.js';

export interface DelegationRuleOptions {
  /** The client that asks: resource `from`'s server, registered as a confidential client. */
  client: string;
  /** The resource the subject token is for (its `aud`): one of `resources`. */
  from: string;
  /** The resource the new token is for: one of `resources`, not `from`. */
  to: string;
  /** The most the new token may carry (besides never more than the subject token). Default: the subject token's scopes. */
  scopes?: string[];
}

export interface TokenExchangeOptions {
  /** Who may exchange a person's token for one for another resource. Default: nobody. */
  delegations?: DelegationRuleOptions[];
  /**
   * How many actors a delegated token's chain may name: 1 (the default) lets a resource's server
   * exchange a person's token, but not a token that was itself delegated.
   */
  maxDelegationDepth?: number;
  /** The authorization servers we issue ID-JAGs for, as an identity provider. Default: none. */
  idJagAudiences?: IdJagAudienceOptions[];
}

export interface IdJagAudienceOptions {
  /** The authorization server's issuer identifier: the ID-JAG's `aud`, and the `audience` a client asks for. */
  issuer: string;
  /** Whether its ID-JAGs carry the person's email address, when we know one. Default false. */
  email?: boolean;
  /**
   * Our clients that may ask, each mapped to its client id at that authorization server (the
   * ID-JAG's `client_id`, which the client presents there). Default: any client, under its own id.
   */
  clients?: Record<string, string>;
}

export interface IdJagAudience {
  issuer: string;
  email: boolean;
  /** Null: any client, under its own id. */
  clients: Record<string, string> | null;
}

export interface DelegationRule {
  client: string;
  from: string;
  to: string;
  /** Undefined: the subject token's. */
  scopes: string[] | undefined;
}

export interface ResolvedTokenExchangeConfig {
  delegations: DelegationRule[];
  maxDelegationDepth: number;
  idJagAudiences: IdJagAudience[];
}

/** Resolves and checks the options against the resources and scopes served; null when nothing is allowed. Throws naming the rule and field. */
export function resolveTokenExchange(
  options: TokenExchangeOptions | undefined,
  served: { resources: readonly string[]; scopesSupported: readonly string[] },
): ResolvedTokenExchangeConfig | null {
  if (options === undefined) return null;
  const depth = options.maxDelegationDepth ?? 1;
  if (!Number.isInteger(depth) || depth < 1 || depth > 10) throw new Error('tokenExchange.maxDelegationDepth must be a whole number from 1 to 10');
  const rules = options.delegations ?? [];
  if (!Array.isArray(rules)) throw new Error('tokenExchange.delegations must be a list of rules');
  const delegations = rules.map((raw: unknown, index) => delegationRule(raw, `tokenExchange.delegations[${index}]`, served));
  const audiences = options.idJagAudiences ?? [];
  if (!Array.isArray(audiences)) throw new Error('tokenExchange.idJagAudiences must be a list');
  const idJagAudiences = audiences.map((raw: unknown, index) => idJagAudience(raw, `tokenExchange.idJagAudiences[${index}]`));
  if (delegations.length === 0 && idJagAudiences.length === 0) return null;
  return { delegations, maxDelegationDepth: depth, idJagAudiences };
}

function idJagAudience(raw: unknown, where: string): IdJagAudience {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`${where} must be an object`);
  const audience = raw as Record<string, unknown>;
  let issuer: string;
  try {
    issuer = normalizeIssuer(String(audience.issuer));
  } catch (error) {
    throw new Error(`${where}.issuer: ${(error as Error).message}`);
  }
  if (audience.email !== undefined && typeof audience.email !== 'boolean') throw new Error(`${where}.email must be true or false`);
  let clients: Record<string, string> | null = null;
  if (audience.clients !== undefined) {
    const given = audience.clients;
    if (typeof given !== 'object' || given === null || Array.isArray(given) || !Object.values(given).every((id) => typeof id === 'string' && id !== '')) {
      throw new Error(`${where}.clients must map our client ids to client ids at ${issuer}`);
    }
    clients = { ...(given as Record<string, string>) };
  }
  return { issuer, email: audience.email === true, clients };
}

function delegationRule(raw: unknown, where: string, served: { resources: readonly string[]; scopesSupported: readonly string[] }): DelegationRule {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`${where} must be an object`);
  const rule = raw as Record<string, unknown>;
  if (typeof rule.client !== 'string' || rule.client === '') throw new Error(`${where}.client must be a client id`);
  const resource = (field: 'from' | 'to'): string => {
    const value = rule[field];
    let canonical: string;
    try {
      canonical = canonicalizeResourceUri(String(value));
    } catch {
      throw new Error(`${where}.${field} must be an absolute URI`);
    }
    if (typeof value !== 'string' || !served.resources.includes(canonical))
      throw new Error(`${where}.${field} must be one of the resources this server issues tokens for`);
    return canonical;
  };
  const from = resource('from');
  const to = resource('to');
  if (from === to) throw new Error(`${where}: from and to are the same resource`);
  let scopes: string[] | undefined;
  if (rule.scopes !== undefined) {
    if (!Array.isArray(rule.scopes) || rule.scopes.length === 0 || !rule.scopes.every((scope) => typeof scope === 'string')) {
      throw new Error(`${where}.scopes must be a non-empty list of scopes`);
    }
    const unknown = (rule.scopes as string[]).filter((scope) => !served.scopesSupported.includes(scope));
    if (unknown.length > 0) throw new Error(`${where}.scopes names scopes this server does not offer: ${unknown.join(' ')}`);
    scopes = [...new Set(rule.scopes as string[])];
  }
  return { client: rule.client, from, to, scopes };
}
