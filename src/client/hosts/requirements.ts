/**
 * What a host profile needs of a server once discovery went through: which of its host's ways
 * it takes there, and whether that way gets through (reachability, registration, client
 * authentication, PKCE, the scope it asks for). Read from the metadata alone: nothing is signed
 * in, registered or sent on anyone's behalf.
 */
import { isLoopbackHost } from '../../core/uri.js';
import type { HostDiscovery, StepFailure } from './discover.js';
import { requestedScopes } from './rules.js';
import type { HostProfile, WayCondition } from './types.js';

const strings = (value: unknown): string[] | undefined => (Array.isArray(value) && value.every((v) => typeof v === 'string') ? (value as string[]) : undefined);

/** Whether the authorization server's metadata meets a way's condition; why not, when it does not. */
export function unmetCondition(when: WayCondition | undefined, server: Record<string, unknown>): string | undefined {
  if (!when) return undefined;
  if (when.clientIdMetadataDocuments && server.client_id_metadata_document_supported !== true)
    return 'does not advertise client_id_metadata_document_supported';
  const methods = strings(server.token_endpoint_auth_methods_supported) ?? [];
  const missing = (when.authMethodsListed ?? []).filter((method) => !methods.includes(method));
  if (missing.length > 0) return `does not list ${missing.join(' and ')} in token_endpoint_auth_methods_supported`;
  const present = (when.authMethodsNotListed ?? []).filter((method) => methods.includes(method));
  if (present.length > 0) return `lists ${present.join(' and ')} in token_endpoint_auth_methods_supported`;
  return undefined;
}

/** Loopback or a private network: a host in its vendor's cloud cannot reach it. */
function privateHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (isLoopbackHost(hostname) || host.endsWith('.localhost') || host.endsWith('.local') || host === '0.0.0.0') return true;
  const v4 = /^(\d+)\.(\d+)\.\d+\.\d+$/.exec(host);
  if (v4) {
    const [a, b] = [Number(v4[1]), Number(v4[2])];
    return (
      a === 10 || a === 127 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254) || (a === 100 && b >= 64 && b <= 127)
    );
  }
  return host.startsWith('fc') || host.startsWith('fd') || host.startsWith('fe80:');
}

/** Whether the host can reach `value` at all; checked for the MCP URL before discovery, for the authorization server after. */
export function unreachable(profile: HostProfile, what: string, value: string): StepFailure | undefined {
  const url = new URL(value);
  if (profile.reachesFromCloud && (url.protocol !== 'https:' || privateHost(url.hostname))) {
    return {
      step: 'reachability',
      answered: `${what} ${value} is ${url.protocol !== 'https:' ? 'plain http' : 'on a private network'}; ${profile.host} connects from its own servers`,
      fix: 'give it a public https URL (and issuer), e.g. behind a TLS-terminating proxy',
    };
  }
  if (profile.requiresHttps && url.protocol !== 'https:' && !isLoopbackHost(url.hostname)) {
    return { step: 'reachability', answered: `${what} ${value} is plain http on a host that is not loopback`, fix: 'serve it over https' };
  }
  return undefined;
}

/** The scope the profile asks for at this server, from its rule. */
export function scopeFor(profile: HostProfile, discovery: HostDiscovery): string[] {
  return requestedScopes(profile.authorization.scope, {
    challenge: discovery.challenge?.scope,
    resource: strings(discovery.resourceMetadata?.scopes_supported),
    server: strings(discovery.authorizationServer?.scopes_supported),
  });
}

/**
 * The first requirement of `profile` the server does not meet, after a discovery that went
 * through; undefined when this way gets as far as the person's sign-in.
 */
export function unmetRequirement(profile: HostProfile, discovery: HostDiscovery, mcpUrl: string): StepFailure | undefined {
  const server = discovery.authorizationServer ?? {};
  const issuer = discovery.issuer ?? mcpUrl;
  const reach = unreachable(profile, 'the authorization server', issuer);
  if (reach) return reach;

  const methods = strings(server.token_endpoint_auth_methods_supported);
  if (profile.registration.kind === 'dynamic' && typeof server.registration_endpoint !== 'string') {
    return { step: 'registration', answered: `${issuer} has no registration_endpoint`, fix: `open dynamic client registration (serve: --registration open)` };
  }
  if (profile.token.clientAuthentication === 'private_key_jwt') {
    const algorithms = strings(server.token_endpoint_auth_signing_alg_values_supported);
    if (algorithms && profile.token.signingAlgorithm && !algorithms.includes(profile.token.signingAlgorithm)) {
      return {
        step: 'client authentication',
        answered: `${issuer} does not list ${profile.token.signingAlgorithm} in token_endpoint_auth_signing_alg_values_supported`,
        fix: `verify ${profile.token.signingAlgorithm} client assertions`,
      };
    }
  }
  if (profile.registration.kind === 'document' && methods && !methods.includes(profile.token.clientAuthentication)) {
    return {
      step: 'client authentication',
      answered: `${issuer} does not list ${profile.token.clientAuthentication} in token_endpoint_auth_methods_supported`,
      fix: `accept ${profile.token.clientAuthentication} at the token endpoint`,
    };
  }

  const challengeMethods = strings(server.code_challenge_methods_supported);
  if (challengeMethods && !challengeMethods.includes('S256')) {
    return {
      step: 'PKCE',
      answered: `${issuer} lists code_challenge_methods_supported ${JSON.stringify(challengeMethods)}, without S256`,
      fix: 'support and list S256',
    };
  }

  const listed = strings(server.scopes_supported);
  if (listed) {
    const unlisted = scopeFor(profile, discovery).filter((scope) => !listed.includes(scope));
    if (unlisted.length > 0) {
      return {
        step: 'scope',
        answered: `${profile.host} asks for ${unlisted.join(' ')}, which ${issuer} does not list in scopes_supported`,
        fix: unlisted.includes('offline_access')
          ? 'list offline_access in scopes_supported and accept it (it asks for a refresh token)'
          : `list ${unlisted.join(' ')} in scopes_supported, or stop advertising it in the protected resource metadata`,
      };
    }
  }
  return undefined;
}
