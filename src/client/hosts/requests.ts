/**
 * The requests a host profile sends, built from its data: the registration body, the
 * authorization request's parameters and the token requests' forms. `doctor --register` sends
 * the registration; the tests send all of them to `serve`.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { HostDiscovery } from './discover.js';
import { scopeFor } from './requirements.js';
import type { HostProfile, ResourceParameter, StateShape } from './types.js';

export interface HostContext {
  /** The MCP URL as the person typed it. */
  mcpUrl: string;
  discovery: HostDiscovery;
  /** The loopback port the host listens on, for `{port}`. */
  port?: number;
  /** The name the person gave the server, for `{server}` (default: the MCP URL's host name). */
  serverName?: string;
}

function fill(text: string, context: HostContext): string {
  return text.replaceAll('{port}', String(context.port ?? 0)).replaceAll('{server}', context.serverName ?? new URL(context.mcpUrl).hostname);
}

function fillDeep(value: unknown, context: HostContext): unknown {
  if (typeof value === 'string') return fill(value, context);
  if (Array.isArray(value)) return value.map((item) => fillDeep(item, context));
  return value;
}

/** The redirect URI the host sends in its authorization request (a fixed port stays as written). */
export function redirectUriOf(profile: HostProfile, context: HostContext): string {
  return fill(profile.redirect.uri, context);
}

/** The registration body a host sends (dynamic registration ways only). */
export function registrationBody(profile: HostProfile, context: HostContext): Record<string, unknown> {
  if (profile.registration.kind !== 'dynamic') throw new Error(`${profile.id} registers no client: it names itself by a document`);
  const { body, sendsScope, grantTypesFromServer } = profile.registration;
  const filled = Object.fromEntries(Object.entries(body).map(([key, value]) => [key, fillDeep(value, context)]));
  if (grantTypesFromServer) {
    const listed = context.discovery.authorizationServer?.grant_types_supported;
    if (Array.isArray(listed)) filled.grant_types = grantTypesFromServer.filter((grant) => listed.includes(grant));
  }
  const scope = scopeFor(profile, context.discovery).join(' ');
  if (sendsScope === 'always' || (sendsScope === 'when-any' && scope !== '')) filled.scope = scope;
  return filled;
}

/** The `resource` a host sends, or undefined when it sends none. */
export function resourceOf(kind: ResourceParameter, context: HostContext): string | undefined {
  switch (kind) {
    case 'absent':
      return undefined;
    case 'typed-url': {
      const url = new URL(context.mcpUrl);
      return `${url.protocol}//${url.host}${url.pathname}`;
    }
    case 'metadata-resource': {
      const resource = context.discovery.resourceMetadata?.resource;
      return typeof resource === 'string' ? resource : context.mcpUrl;
    }
  }
}

/** A fresh `state` of the host's shape; an unknown shape is standard base64 holding `+`, `/` and `=`. */
export function stateOf(shape: StateShape): string {
  switch (shape) {
    case 'base64url':
      return randomBytes(16).toString('base64url');
    case 'uuid':
      return randomUUID();
    case 'unknown':
      // 0xfb 0xef 0xff encode as "++//"; 31 bytes end in one "=".
      return Buffer.concat([Buffer.from([0xfb, 0xef, 0xff]), randomBytes(28)]).toString('base64');
  }
}

export interface AuthorizationInputs {
  clientId: string;
  redirectUri: string;
  state: string;
  codeChallenge: string;
}

/** The query of the host's authorization request. */
export function authorizationParameters(profile: HostProfile, context: HostContext, inputs: AuthorizationInputs): URLSearchParams {
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: inputs.clientId,
    redirect_uri: inputs.redirectUri,
    code_challenge: inputs.codeChallenge,
    code_challenge_method: 'S256',
    state: inputs.state,
  });
  const scope = scopeFor(profile, context.discovery);
  if (scope.length > 0) params.set('scope', scope.join(' '));
  const resource = resourceOf(profile.authorization.resource, context);
  if (resource !== undefined) params.set('resource', resource);
  return params;
}

/** The form of the host's code exchange; client authentication beyond `client_id` (a secret, an assertion) is the caller's. */
export function codeExchangeForm(
  profile: HostProfile,
  context: HostContext,
  inputs: { clientId: string; code: string; redirectUri: string; codeVerifier: string },
): URLSearchParams {
  const form = new URLSearchParams({
    grant_type: 'authorization_code',
    code: inputs.code,
    redirect_uri: inputs.redirectUri,
    code_verifier: inputs.codeVerifier,
    client_id: inputs.clientId,
  });
  const resource = resourceOf(profile.token.resource, context);
  if (resource !== undefined) form.set('resource', resource);
  return form;
}

/** The form of the host's refresh. */
export function refreshForm(
  profile: HostProfile,
  context: HostContext,
  inputs: { clientId: string; refreshToken: string; grantedScope?: string | undefined },
): URLSearchParams {
  const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: inputs.refreshToken, client_id: inputs.clientId });
  const scope =
    profile.refresh.scope === 'granted'
      ? inputs.grantedScope
      : profile.refresh.scope === 'requested'
        ? scopeFor(profile, context.discovery).join(' ')
        : undefined;
  if (scope) form.set('scope', scope);
  const resource = resourceOf(profile.refresh.resource, context);
  if (resource !== undefined) form.set('resource', resource);
  return form;
}
