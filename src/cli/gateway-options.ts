/** serve's gateway flags → the gateway paths of serve's app, each checked before anything starts. */
import { parseGatewaySpec } from '../gateway/index.js';
import type { CoHostedGateway } from './co-hosted-app.js';
import { usageError } from './errors.js';

export const GATEWAY_HELP = `  --gateway PATH=URL       publish the Streamable HTTP context server at URL as <issuer>PATH, protected as a
                           resource of its own (its own audience), and forward valid requests to it; e.g.
                           /github=http://127.0.0.1:3000/mcp (repeatable). URL never gets the person's token
  --gateway-timeout S      answer 504 when an upstream takes longer to begin its answer (default 30)
  --gateway-token MODE     what an upstream gets in Authorization: none (default) | signed (a token this server
                           signs for the upstream's URL as audience, with the person's sub, client_id and scope,
                           living 5 minutes at most, verifiable with <issuer>/jwks)`;

export const GATEWAY_OPTIONS = {
  gateway: { type: 'string', multiple: true },
  'gateway-timeout': { type: 'string' },
  'gateway-token': { type: 'string' },
} as const;

export interface GatewayFlags {
  gateway?: string[] | undefined;
  'gateway-timeout'?: string | undefined;
  'gateway-token'?: string | undefined;
}

export function gatewayOptions(values: GatewayFlags): CoHostedGateway[] {
  const specs = values.gateway ?? [];
  if (specs.length === 0) {
    if (values['gateway-timeout'] !== undefined) throw usageError('--gateway-timeout goes with --gateway');
    if (values['gateway-token'] !== undefined) throw usageError('--gateway-token goes with --gateway');
    return [];
  }
  const timeout = values['gateway-timeout'] === undefined ? 30 : Number(values['gateway-timeout']);
  if (!Number.isInteger(timeout) || timeout < 1 || timeout > 600) throw usageError('--gateway-timeout must be a whole number from 1 to 600');
  const mode = values['gateway-token'] ?? 'none';
  if (mode !== 'none' && mode !== 'signed') throw usageError('--gateway-token must be none or signed');
  const paths = new Set<string>();
  return specs.map((text) => {
    const parsed = parseGatewaySpec(text);
    if (!parsed.ok) throw usageError(`--gateway ${parsed.defect}`);
    if (paths.has(parsed.value.path)) throw usageError(`--gateway ${parsed.value.path} is given twice`);
    paths.add(parsed.value.path);
    return { ...parsed.value, timeoutMs: timeout * 1000, signUpstreamTokens: mode === 'signed' };
  });
}
