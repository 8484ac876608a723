/**
 * Which scopes each tool, resource and prompt of an upstream needs, beyond the path's own: the
 * server-side scope challenge. A `tools/call` for a tool whose scopes the token lacks is refused
 * with 403 insufficient_scope naming every scope the request needs, so a host can step up.
 *
 * The policy file maps each gateway path to its rules:
 *
 *   { "/github": { "tools": { "delete_repo": ["repo:admin"] },
 *                  "resources": { "file:///srv/private/*": ["files:private"] },
 *                  "prompts": { "triage": ["repo:read"] },
 *                  "filterToolList": true } }
 *
 * A resource key ending in `*` covers every URI that begins with what precedes it. Names are
 * matched exactly (in Maps: a tool named `__proto__` finds nothing).
 */
import type { Result } from '../core/index.js';

export interface ToolPolicy {
  tools: Map<string, string[]>;
  prompts: Map<string, string[]>;
  /** Exact URIs, and prefixes (from keys ending in `*`). */
  resources: { exact: Map<string, string[]>; prefixes: [string, string[]][] };
  /** tools/list answers show only the tools the token's scopes cover. */
  filterToolList: boolean;
}

const KINDS = ['tools', 'resources', 'prompts'] as const;

/** The policy file's content, checked: every path one of the gateway's, every scope one the server issues. */
export function parseToolPolicies(json: unknown, known: { paths: readonly string[]; scopes: readonly string[] }): Result<Map<string, ToolPolicy>, string> {
  const fail = (defect: string): Result<Map<string, ToolPolicy>, string> => ({ ok: false, defect });
  if (!isObject(json)) return fail('must be a JSON object whose keys are --gateway paths');
  const policies = new Map<string, ToolPolicy>();
  for (const [path, rules] of Object.entries(json)) {
    if (!known.paths.includes(path)) return fail(`names ${path}, which is not a --gateway path`);
    if (!isObject(rules)) return fail(`${path} must be an object with tools, resources, prompts or filterToolList`);
    const policy: ToolPolicy = { tools: new Map(), prompts: new Map(), resources: { exact: new Map(), prefixes: [] }, filterToolList: false };
    for (const [key, value] of Object.entries(rules)) {
      if (key === 'filterToolList') {
        if (typeof value !== 'boolean') return fail(`${path}.filterToolList must be true or false`);
        policy.filterToolList = value;
        continue;
      }
      if (!(KINDS as readonly string[]).includes(key)) return fail(`${path}.${key} is not one of tools, resources, prompts, filterToolList`);
      if (!isObject(value)) return fail(`${path}.${key} must map names to lists of scopes`);
      for (const [name, scopes] of Object.entries(value)) {
        if (!Array.isArray(scopes) || scopes.some((scope) => typeof scope !== 'string')) return fail(`${path}.${key}.${name} must be a list of scopes`);
        const unknown = (scopes as string[]).find((scope) => !known.scopes.includes(scope));
        if (unknown !== undefined)
          return fail(`${path}.${key}.${name} names the scope ${unknown}, which this server does not issue (${known.scopes.join(', ')})`);
        const list = [...new Set(scopes as string[])];
        if (key === 'tools') policy.tools.set(name, list);
        else if (key === 'prompts') policy.prompts.set(name, list);
        else if (name.endsWith('*')) policy.resources.prefixes.push([name.slice(0, -1), list]);
        else policy.resources.exact.set(name, list);
      }
    }
    policies.set(path, policy);
  }
  return { ok: true, value: policies };
}

/** The scopes a JSON-RPC message, or a batch of them, needs by the policy. */
export function scopesNeeded(policy: ToolPolicy, body: unknown): string[] {
  const needed = new Set<string>();
  for (const message of Array.isArray(body) ? body : [body]) {
    if (!isObject(message)) continue;
    const params = isObject(message.params) ? message.params : {};
    let scopes: string[] | undefined;
    if (message.method === 'tools/call' && typeof params.name === 'string') scopes = policy.tools.get(params.name);
    else if (message.method === 'prompts/get' && typeof params.name === 'string') scopes = policy.prompts.get(params.name);
    else if ((message.method === 'resources/read' || message.method === 'resources/subscribe') && typeof params.uri === 'string')
      scopes = resourceScopes(policy, params.uri);
    for (const scope of scopes ?? []) needed.add(scope);
  }
  return [...needed];
}

/** Whether a token with `granted` may call the tool: what tools/list keeps when it is filtered. */
export function toolAllowed(policy: ToolPolicy, name: string, granted: readonly string[]): boolean {
  return (policy.tools.get(name) ?? []).every((scope) => granted.includes(scope));
}

function resourceScopes(policy: ToolPolicy, uri: string): string[] {
  const scopes = new Set(policy.resources.exact.get(uri) ?? []);
  for (const [prefix, list] of policy.resources.prefixes) if (uri.startsWith(prefix)) for (const scope of list) scopes.add(scope);
  return [...scopes];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
