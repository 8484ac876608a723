/**
 * serve's flags for token exchange (RFC 8693) → the authorization server's `tokenExchange`
 * option: the delegation rules from a JSON file (--delegation-config), checked here, naming the
 * file and the rule, before anything starts.
 */
import { readFileSync } from 'node:fs';
import { resolveTokenExchange, type AuthorizationServerOptions, type TokenExchangeOptions } from '../authorization-server/index.js';
import { canonicalizeResourceUri } from '../core/index.js';
import { CliError } from './errors.js';

export const TOKEN_EXCHANGE_HELP = `  --delegation-config FILE delegation rules as JSON: which context server (a confidential client) may
                           exchange a person's token for its resource for a token for another
                           resource, with which scopes, and how long a chain may be (docs/delegation.md)`;

export const TOKEN_EXCHANGE_OPTIONS = {
  'delegation-config': { type: 'string' },
} as const;

export interface TokenExchangeFlags {
  'delegation-config'?: string | undefined;
}

/** The options the flags give; `scopesSupported` are the scopes serve offers, which rules may name. */
export function tokenExchangeOptions(flags: TokenExchangeFlags, scopesSupported: readonly string[]): Pick<AuthorizationServerOptions, 'tokenExchange'> {
  const file = flags['delegation-config'];
  return file === undefined ? {} : { tokenExchange: readDelegationRules(file, scopesSupported) };
}

/** Reads and checks the file: `{ "delegations": [...], "maxDelegationDepth": N }`, or a list of rules. */
export function readDelegationRules(file: string, scopesSupported: readonly string[]): TokenExchangeOptions {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new CliError(`Cannot read --delegation-config ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new CliError(`--delegation-config ${file} is not valid JSON: ${(error as Error).message}`);
  }
  const options = (Array.isArray(parsed) ? { delegations: parsed } : parsed) as TokenExchangeOptions;
  if (typeof options !== 'object' || options === null) throw new CliError(`--delegation-config ${file} must hold a list of rules, or an object with delegations.`);
  const unknown = Object.keys(options).filter((key) => key !== 'delegations' && key !== 'maxDelegationDepth');
  if (unknown.length > 0) throw new CliError(`--delegation-config ${file}: unknown field "${unknown[0]}".`);
  try {
    // The resources are not all known yet (the default one names the port): each rule's own stand
    // in here, and the server checks them against those it serves when it starts.
    const named = (options.delegations ?? []).flatMap((rule) => [rule?.from, rule?.to]).filter((value): value is string => typeof value === 'string' && URL.canParse(value));
    if (resolveTokenExchange(options, { resources: named.map((value) => canonicalizeResourceUri(value)), scopesSupported }) === null) {
      throw new Error('no rules');
    }
  } catch (error) {
    throw new CliError(`--delegation-config ${file}: ${(error as Error).message}.`);
  }
  return options;
}
