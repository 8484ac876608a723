/**
 * The shape of a host profile: what one MCP host sends, one way it connects (by client ID
 * metadata document, or by dynamic registration), as data. `profiles.ts` holds the entries;
 * `discover.ts` and `requirements.ts` read them for `doctor`, and the tests drive `serve` with them.
 * Placeholders in strings: `{port}` is a loopback port the host picks, `{server}` the name the
 * person gave the server.
 */

/** Where a host looks for protected resource metadata (RFC 9728), tried in order. */
export type ResourceMetadataSource =
  /** The `resource_metadata` of the 401's challenge, wherever it points. */
  | 'challenge'
  /** The challenge's `resource_metadata`, only on the MCP URL's own origin (else ignored). */
  | 'challenge-same-origin'
  /** `/.well-known/oauth-protected-resource` inserted before the MCP URL's path (RFC 9728 §3.1). */
  | 'path'
  /** `/.well-known/oauth-protected-resource` appended to the MCP URL's path. */
  | 'path-appended'
  /** `/.well-known/oauth-protected-resource` at the origin. */
  | 'root';

/** Where a host looks for the authorization server's metadata, tried in order (for an issuer without a path, the path forms are the root forms). */
export type AuthorizationServerMetadataSource =
  /** RFC 8414 §3.1: `/.well-known/oauth-authorization-server` inserted before the issuer's path. */
  | 'oauth-path'
  /** OpenID discovery with the well-known path inserted before the issuer's path. */
  | 'oidc-path'
  /** OpenID Connect Discovery 1.0 §4: `<issuer>/.well-known/openid-configuration`. */
  | 'oidc-appended'
  /** `/.well-known/oauth-authorization-server` at the issuer's origin, whatever its path. */
  | 'oauth-root'
  /** `/.well-known/openid-configuration` at the issuer's origin, whatever its path. */
  | 'oidc-root';

/** How a host compares the metadata's `resource` with the URL the person typed. */
export type ResourceRule =
  /** Equal once both are parsed as URLs (a trailing slash or a query makes them differ). */
  | 'same-url'
  /** Equal in scheme, host, port and path (the query is not compared). */
  | 'same-origin-and-path'
  /** The URL, or a parent path of it on the same origin, with or without a trailing slash. */
  | 'url-or-parent'
  /** The URL, or a parent path of it on the same origin; a trailing slash counts only on a parent. */
  | 'url-or-parent-strict'
  /** Not compared (or the host's rule is not public). */
  | 'unchecked';

/** The scope a host asks for, from what the server advertises. */
export type ScopeRule =
  /** The protected resource's scopes, the OpenID scopes the authorization server lists, and offline_access, always. */
  | 'resource-openid-and-offline'
  /** The 401's scope, else the protected resource's scopes; offline_access added when the authorization server lists it. */
  | 'challenge-else-resource-plus-offline'
  /** The 401's scope, else the protected resource's scopes. */
  | 'challenge-else-resource'
  /** The protected resource's scopes. */
  | 'resource'
  /** The 401's and the protected resource's scopes, else the authorization server's; offline_access added when it lists it. */
  | 'challenge-and-resource-else-server-plus-offline'
  /** Every scope the authorization server lists. */
  | 'server'
  /** The 401's scope, else the resource's, else the authorization server's, else `openid email profile`. */
  | 'challenge-resource-server-else-openid'
  /** The protected resource's scopes when it lists any, else the authorization server's. */
  | 'resource-else-server';

/** What a host sends as `resource` (RFC 8707). */
export type ResourceParameter =
  /** The protected resource metadata's `resource`. */
  | 'metadata-resource'
  /** The MCP URL as typed: scheme, host and path. */
  | 'typed-url'
  | 'absent';

/** The shape of the `state` a host sends. */
export type StateShape =
  /** Random bytes, base64url without padding. */
  | 'base64url'
  /** A random UUID. */
  | 'uuid'
  /** Not public: tested as standard base64 with `+`, `/` and `=`, which must come back exactly. */
  | 'unknown';

export type ClientAuthentication = 'none' | 'client_secret_post' | 'client_secret_basic' | 'private_key_jwt';

/** When a host takes this way; a host tries its ways in the order of `HOST_PROFILES`. */
export interface WayCondition {
  /** The authorization server advertises `client_id_metadata_document_supported`. */
  clientIdMetadataDocuments?: true;
  /** Each of these is in `token_endpoint_auth_methods_supported`. */
  authMethodsListed?: ClientAuthentication[];
  /** None of these is in `token_endpoint_auth_methods_supported`. */
  authMethodsNotListed?: ClientAuthentication[];
}

export type Registration =
  | {
      kind: 'document';
      /** The document's URL, its client_id. */
      url: string;
      /** The document as the host serves it. */
      document: Record<string, unknown>;
      /** False when the document's body is not public and this one is what the host's code implies. */
      recorded: boolean;
    }
  | {
      kind: 'dynamic';
      /** The RFC 7591 request body; `scope` is added by the host's scope rule when `sendsScope`. */
      body: Record<string, unknown>;
      /** The body carries the scope the host asks for (an empty string when there is none). */
      sendsScope?: 'when-any' | 'always';
      /** grant_types narrowed to those the authorization server lists. */
      grantTypesFromServer?: readonly string[];
    };

export interface HostProfile {
  /** Stable id: `<host>-<way>`. */
  id: string;
  /** The host as people call it. */
  host: string;
  way: 'document' | 'registration';
  /** Where each fact comes from: the host's code, or an issue or capture that shows what it sends. */
  sources: string[];
  /** Where this way applies (the host's other ways come first when their condition holds). */
  when?: WayCondition;
  /** A host that runs in its vendor's cloud reaches the server from the internet: a public https URL. */
  reachesFromCloud?: true;
  /** Refuses a plain-http URL whose host is not loopback. */
  requiresHttps?: true;
  /** Runs in a browser page of this origin: every answer it reads needs CORS for it. */
  browserOrigin?: string;
  discovery: {
    /** The request without a token that starts discovery. */
    probe: 'POST initialize' | 'GET' | 'HEAD';
    /** Headers on every discovery request. */
    headers?: Record<string, string>;
    resourceMetadata: readonly ResourceMetadataSource[];
    resourceRule: ResourceRule;
    authorizationServerMetadata: readonly AuthorizationServerMetadataSource[];
    /** The metadata's `issuer` must be the URL it was found under (RFC 8414 §3.3). */
    checksIssuer: boolean;
  };
  registration: Registration;
  redirect: {
    /** The redirect URI it sends; `{port}` is a loopback port it picks at random, unless `port` says otherwise. */
    uri: string;
    port?: 'random' | 'fixed' | 'none';
    /** False for URIs nobody can listen on here (a vendor's https page, a private-use scheme). */
    listens: boolean;
  };
  authorization: {
    scope: ScopeRule;
    resource: ResourceParameter;
    state: StateShape;
    /**
     * RFC 9207: `required` refuses a redirect without the server's `iss` when the server advertises
     * it; `ignored` does not read it.
     */
    iss: 'required' | 'ignored';
  };
  token: {
    resource: ResourceParameter;
    clientAuthentication: ClientAuthentication;
    /** The client assertion's algorithm (private_key_jwt). */
    signingAlgorithm?: 'RS256';
  };
  refresh: {
    resource: ResourceParameter;
    /** `granted`: the scope granted before; `requested`: the scope it asked for at authorization. */
    scope: 'granted' | 'requested' | 'absent';
    /** Refreshes this long before the access token expires (seconds). */
    earlySeconds?: number;
    /** This many sessions of the host may refresh one grant at once, with the same refresh token. */
    concurrentSessions?: number;
    /** What it does when the server answers invalid_client. */
    onInvalidClient?: 're-register';
  };
  /** What the entry cannot say from public sources, in words. */
  unknowns?: string;
}
