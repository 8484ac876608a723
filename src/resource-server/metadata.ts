import { wellKnownUrl } from '../core/uri.js';

export interface ResourceMetadataInput {
  resource: string;
  authorizationServers: string[];
  scopesSupported?: string[];
  resourceName?: string;
  resourceDocumentation?: string;
  /** RFC 9728 §2: the DPoP proof algorithms accepted, when DPoP-bound tokens are. */
  dpopSigningAlgValuesSupported?: readonly string[];
}

/** The RFC 9728 document: at least one authorization server (spec, Revision B), bearer in the header only. */
export function protectedResourceMetadata(input: ResourceMetadataInput): Record<string, unknown> {
  return {
    resource: input.resource,
    authorization_servers: input.authorizationServers,
    ...(input.scopesSupported ? { scopes_supported: input.scopesSupported } : {}),
    bearer_methods_supported: ['header'],
    ...(input.resourceName ? { resource_name: input.resourceName } : {}),
    ...(input.resourceDocumentation ? { resource_documentation: input.resourceDocumentation } : {}),
    ...(input.dpopSigningAlgValuesSupported ? { dpop_signing_alg_values_supported: input.dpopSigningAlgValuesSupported } : {}),
  };
}

/** RFC 9728 §3.1: the well-known segment goes between the host and the resource's path. */
export function protectedResourceMetadataUrl(resource: string): string {
  return wellKnownUrl(resource, 'oauth-protected-resource');
}
