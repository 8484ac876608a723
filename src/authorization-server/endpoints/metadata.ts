import { DPOP_SIGNING_ALGORITHMS } from '../../core/dpop.js';
import { ID_JAG_PROFILE, ID_JAG_TOKEN_TYPE, TOKEN_EXCHANGE_GRANT_TYPE } from '../../core/id-jag.js';
import { SUPPORTED_JWS_ALGORITHMS } from '../../core/jwt.js';
import { DEVICE_CODE_GRANT_TYPE, JWT_BEARER_GRANT_TYPE } from '../../core/protocol.js';
import { OFFLINE_ACCESS, OPENID_SCOPES } from '../../core/scopes.js';
import type { ResolvedConfig } from '../config.js';
import { DEFAULT_SIGNING_ALG } from '../keys.js';
import { respond, type Answer } from '../http/responses.js';

/** The RFC 8414 document this server serves. */
export interface AuthorizationServerMetadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  /** Absent when registration is closed. */
  registration_endpoint?: string;
  revocation_endpoint: string;
  introspection_endpoint: string;
  jwks_uri: string;
  /** Absent when the store keeps no device authorizations (no device grant then). */
  device_authorization_endpoint?: string;
  scopes_supported: string[];
  response_types_supported: string[];
  response_modes_supported: string[];
  grant_types_supported: string[];
  token_endpoint_auth_methods_supported: string[];
  token_endpoint_auth_signing_alg_values_supported: string[];
  revocation_endpoint_auth_methods_supported: string[];
  revocation_endpoint_auth_signing_alg_values_supported: string[];
  introspection_endpoint_auth_methods_supported: string[];
  introspection_endpoint_auth_signing_alg_values_supported: string[];
  code_challenge_methods_supported: string[];
  client_id_metadata_document_supported: boolean;
  authorization_response_iss_parameter_supported: boolean;
  prompt_values_supported: string[];
  /** RFC 9449 §5.1: the algorithms DPoP proofs may be signed with. */
  dpop_signing_alg_values_supported: string[];
  /** The jwt-bearer grant's profiles: the ID-JAG's, when a trusted IdP is configured. */
  authorization_grant_profiles_supported?: string[];
  /**
   * The `requested_token_type`s token exchange issues across domains
   * (draft-ietf-oauth-identity-chaining, "Authorization Server Metadata"): the ID-JAG's, when we issue them as an identity
   * provider (draft-ietf-oauth-identity-assertion-authz-grant, "Authorization Server (IdP) Metadata").
   */
  identity_chaining_requested_token_types_supported?: string[];
  /** OpenID Connect Discovery 1.0 §3: the OpenID provider's fields (ID tokens when `openid` is granted, the userinfo endpoint). */
  userinfo_endpoint: string;
  id_token_signing_alg_values_supported: string[];
  subject_types_supported: string[];
  claims_supported: string[];
}

/** The RFC 8414 document. */
export function authorizationServerMetadata(config: ResolvedConfig): AuthorizationServerMetadata {
  const { endpoints } = config;
  const clientAuth = ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'];
  // The client assertion algorithms (private_key_jwt): asymmetric only, never none or HMAC.
  const signingAlgs = [...SUPPORTED_JWS_ALGORITHMS];
  return {
    issuer: config.issuer,
    authorization_endpoint: endpoints.authorization,
    token_endpoint: endpoints.token,
    ...(config.registration === 'closed' ? {} : { registration_endpoint: endpoints.registration }),
    revocation_endpoint: endpoints.revocation,
    introspection_endpoint: endpoints.introspection,
    jwks_uri: endpoints.jwks,
    ...(config.deviceGrant ? { device_authorization_endpoint: endpoints.deviceAuthorization } : {}),
    scopes_supported: [...new Set([...config.scopesSupported, OFFLINE_ACCESS, ...OPENID_SCOPES])],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: [
      'authorization_code',
      'refresh_token',
      'client_credentials',
      ...(config.deviceGrant ? [DEVICE_CODE_GRANT_TYPE] : []),
      ...(config.jwtBearer ? [JWT_BEARER_GRANT_TYPE] : []),
      ...(config.tokenExchange ? [TOKEN_EXCHANGE_GRANT_TYPE] : []),
    ],
    token_endpoint_auth_methods_supported: clientAuth,
    token_endpoint_auth_signing_alg_values_supported: signingAlgs,
    revocation_endpoint_auth_methods_supported: clientAuth,
    revocation_endpoint_auth_signing_alg_values_supported: signingAlgs,
    introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt'],
    introspection_endpoint_auth_signing_alg_values_supported: signingAlgs,
    code_challenge_methods_supported: ['S256'],
    client_id_metadata_document_supported: config.clientIdMetadataDocuments.enabled,
    authorization_response_iss_parameter_supported: true,
    prompt_values_supported: ['none', 'login', 'consent'],
    dpop_signing_alg_values_supported: [...DPOP_SIGNING_ALGORITHMS],
    ...(config.jwtBearer && config.jwtBearer.trustedIdps.length > 0 ? { authorization_grant_profiles_supported: [ID_JAG_PROFILE] } : {}),
    ...(config.tokenExchange && config.tokenExchange.idJagAudiences.length > 0
      ? { identity_chaining_requested_token_types_supported: [ID_JAG_TOKEN_TYPE] }
      : {}),
    userinfo_endpoint: endpoints.userinfo,
    // ID tokens are signed as access tokens are, with the keys of keys.ts.
    id_token_signing_alg_values_supported: [DEFAULT_SIGNING_ALG],
    subject_types_supported: ['public'],
    claims_supported: ['iss', 'sub', 'aud', 'azp', 'exp', 'iat', 'auth_time', 'nonce', 'preferred_username', 'email'],
  };
}

/**
 * GET /.well-known/oauth-authorization-server, and the same document at the issuer's
 * /.well-known/openid-configuration (OpenID Connect Discovery). Discovery requests may carry
 * `Context-Protocol-Version` (or the ecosystem's `MCP-Protocol-Version`); every revision we know
 * gets the same document, and an unknown version is answered too (the spec leaves the choice open).
 */
export function metadataEndpoint(config: ResolvedConfig): Answer {
  return respond(JSON.stringify(authorizationServerMetadata(config)), 200, {
    'Content-Type': 'application/json',
    'Cache-Control': 'public, max-age=300',
  });
}
