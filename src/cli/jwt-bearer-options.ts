/**
 * serve's flags for the jwt-bearer grant → the authorization server's options: enterprise
 * identity providers whose ID-JAGs are accepted (--trusted-idp), and workload identity rules from
 * a JSON file (--workload-config). The file is checked here, naming the file and the rule, before
 * anything starts.
 */
import { readFileSync } from 'node:fs';
import type { AuthorizationServerOptions, WorkloadRuleOptions } from '../authorization-server/index.js';
import { checkTrustedIssuer, resolveWorkloadRules } from '../cli-support.js';
import { CliError } from './errors.js';

export const JWT_BEARER_HELP = `  --trusted-idp ISSUER     accept ID-JAGs (enterprise-managed authorization) from this identity
                           provider, an https issuer; repeatable (docs/enterprise.md)
  --workload-config FILE   workload identity rules as JSON: platform tokens (Kubernetes, SPIFFE)
                           accepted as the jwt-bearer grant, and as which client (docs/enterprise.md)
  --allow-insecure-idp     allow http://127.0.0.1 IdPs and workload issuers (tests only)`;

export const JWT_BEARER_OPTIONS = {
  'trusted-idp': { type: 'string', multiple: true },
  'workload-config': { type: 'string' },
  'allow-insecure-idp': { type: 'boolean' },
} as const;

export interface JwtBearerFlags {
  'trusted-idp'?: string[] | undefined;
  'workload-config'?: string | undefined;
  'allow-insecure-idp'?: boolean | undefined;
}

type JwtBearerOptions = Pick<AuthorizationServerOptions, 'trustedIdps' | 'workloads' | 'allowInsecureIssuers'>;

/** The options the flags give; `scopesSupported` are the scopes serve offers, which rules may name. */
export function jwtBearerOptions(flags: JwtBearerFlags, scopesSupported: readonly string[]): JwtBearerOptions {
  const allowInsecureIssuers = flags['allow-insecure-idp'] ?? false;
  const trustedIdps = flags['trusted-idp'] ?? [];
  for (const idp of trustedIdps) {
    try {
      checkTrustedIssuer(idp, '--trusted-idp', allowInsecureIssuers);
    } catch (error) {
      throw new CliError(`${(error as Error).message}.`);
    }
  }
  const file = flags['workload-config'];
  const workloads = file === undefined ? [] : readWorkloadRules(file, scopesSupported, allowInsecureIssuers);
  return { trustedIdps, workloads, ...(allowInsecureIssuers ? { allowInsecureIssuers } : {}) };
}

/** Reads and checks the file: a JSON list of rules (or `{ "workloads": [...] }`). */
export function readWorkloadRules(file: string, scopesSupported: readonly string[], allowLoopbackHttp: boolean): WorkloadRuleOptions[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new CliError(`Cannot read --workload-config ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new CliError(`--workload-config ${file} is not valid JSON: ${(error as Error).message}`);
  }
  const rules =
    typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) && 'workloads' in parsed ? (parsed as { workloads: unknown }).workloads : parsed;
  try {
    // The issuer is not known yet (it may name the port); an example one checks everything else.
    resolveWorkloadRules(rules, { issuer: 'https://issuer.invalid', scopesSupported, allowLoopbackHttp });
  } catch (error) {
    throw new CliError(`--workload-config ${file}: ${(error as Error).message}.`);
  }
  if ((rules as unknown[]).length === 0) throw new CliError(`--workload-config ${file} has no rules.`);
  return rules as WorkloadRuleOptions[];
}
