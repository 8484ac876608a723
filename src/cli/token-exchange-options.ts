/**
 * serve's flags for token exchange (RFC 8693) → the authorization server's `tokenExchange`
 * option: the delegation rules from a JSON file (--delegation-config), and the authorization
 * servers we issue ID-JAGs for (--id-jag-audience, or --id-jag-config for the email and the
 * client ids there), checked here, naming the flag, the file and the rule, before anything starts.
 */
import { readFileSync } from 'node:fs';
import type { AuthorizationServerOptions, IdJagAudienceOptions, TokenExchangeOptions } from '../authorization-server/index.js';
import { resolveTokenExchange } from '../cli-support.js';
import { canonicalizeResourceUri, normalizeIssuer } from '../core/index.js';
import { CliError } from './errors.js';

export const TOKEN_EXCHANGE_HELP = `  --delegation-config FILE delegation rules as JSON: which context server (a confidential client) may
                           exchange a person's token for its resource for a token for another
                           resource, with which scopes, and how long a chain may be (docs/delegation.md)
  --id-jag-audience ISSUER issue ID-JAGs for this authorization server, as the people's identity
                           provider: a client exchanges a person's refresh token for one; repeatable
                           (docs/enterprise.md)
  --id-jag-config FILE     ID-JAG audiences as JSON, each with the person's email or not and the
                           client ids there of the clients that may ask (docs/enterprise.md)`;

export const TOKEN_EXCHANGE_OPTIONS = {
  'delegation-config': { type: 'string' },
  'id-jag-audience': { type: 'string', multiple: true },
  'id-jag-config': { type: 'string' },
} as const;

export interface TokenExchangeFlags {
  'delegation-config'?: string | undefined;
  'id-jag-audience'?: string[] | undefined;
  'id-jag-config'?: string | undefined;
}

/** The options the flags give; `scopesSupported` are the scopes serve offers, which rules may name. */
export function tokenExchangeOptions(flags: TokenExchangeFlags, scopesSupported: readonly string[]): Pick<AuthorizationServerOptions, 'tokenExchange'> {
  const file = flags['delegation-config'];
  const delegation = file === undefined ? {} : readDelegationRules(file, scopesSupported);
  const flagged = (flags['id-jag-audience'] ?? []).map((issuer) => {
    try {
      return { issuer: normalizeIssuer(issuer) };
    } catch (error) {
      throw new CliError(`--id-jag-audience ${issuer}: ${(error as Error).message}.`);
    }
  });
  const audiences = [...flagged, ...(flags['id-jag-config'] === undefined ? [] : readIdJagAudiences(flags['id-jag-config']))];
  if (file === undefined && audiences.length === 0) return {};
  return { tokenExchange: { ...delegation, ...(audiences.length > 0 ? { idJagAudiences: audiences } : {}) } };
}

/** Reads the file: a list of audiences (`{ "issuer", "email", "clients" }`), or `{ "idJagAudiences": [...] }`. */
export function readIdJagAudiences(file: string): IdJagAudienceOptions[] {
  const parsed = readJson(file, '--id-jag-config');
  const list = Array.isArray(parsed)
    ? parsed
    : typeof parsed === 'object' && parsed !== null && 'idJagAudiences' in parsed
      ? (parsed as { idJagAudiences: unknown }).idJagAudiences
      : undefined;
  if (!Array.isArray(list) || list.length === 0) throw new CliError(`--id-jag-config ${file} must hold a list of audiences.`);
  try {
    resolveTokenExchange({ idJagAudiences: list as IdJagAudienceOptions[] }, { resources: [], scopesSupported: [] });
  } catch (error) {
    throw new CliError(`--id-jag-config ${file}: ${(error as Error).message}.`);
  }
  return list as IdJagAudienceOptions[];
}

function readJson(file: string, flag: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new CliError(`Cannot read ${flag} ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new CliError(`${flag} ${file} is not valid JSON: ${(error as Error).message}`);
  }
}

/** Reads and checks the file: `{ "delegations": [...], "maxDelegationDepth": N }`, or a list of rules. */
export function readDelegationRules(file: string, scopesSupported: readonly string[]): TokenExchangeOptions {
  const parsed = readJson(file, '--delegation-config');
  const options = (Array.isArray(parsed) ? { delegations: parsed } : parsed) as TokenExchangeOptions;
  if (typeof options !== 'object' || options === null)
    throw new CliError(`--delegation-config ${file} must hold a list of rules, or an object with delegations.`);
  const unknown = Object.keys(options).filter((key) => key !== 'delegations' && key !== 'maxDelegationDepth');
  if (unknown.length > 0) throw new CliError(`--delegation-config ${file}: unknown field "${unknown[0]}".`);
  try {
    // The resources are not all known yet (the default one names the port): each rule's own stand
    // in here, and the server checks them against those it serves when it starts.
    const named = (options.delegations ?? [])
      .flatMap((rule) => [rule?.from, rule?.to])
      .filter((value): value is string => typeof value === 'string' && URL.canParse(value));
    if (resolveTokenExchange(options, { resources: named.map((value) => canonicalizeResourceUri(value)), scopesSupported }) === null) {
      throw new Error('no rules');
    }
  } catch (error) {
    throw new CliError(`--delegation-config ${file}: ${(error as Error).message}.`);
  }
  return options;
}
