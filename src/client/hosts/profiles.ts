/**
 * What the MCP hosts people use send when they connect to a context server, one entry per way a
 * host connects, each naming its public sources: the host's own code where it is public, else
 * the issues and captures that show its requests. A host's entries are listed in the order it
 * tries them; `when` says where a way applies. What no source shows is said in `unknowns`, and
 * such a field holds what the MCP specification asks of a client.
 */
import type { HostProfile } from './types.js';

const GRANTS = ['authorization_code', 'refresh_token'];

/** The MCP TypeScript SDK's discovery (the client/auth module of `@modelcontextprotocol/sdk`), which mcp-remote and the Inspector run. */
const MCP_SDK_DISCOVERY: HostProfile['discovery'] = {
  probe: 'POST initialize',
  headers: { 'MCP-Protocol-Version': '2025-11-25' },
  resourceMetadata: ['challenge', 'path', 'root'],
  resourceRule: 'url-or-parent',
  authorizationServerMetadata: ['oauth-path', 'oidc-path', 'oidc-appended'],
  checksIssuer: false,
};

/** rmcp's discovery (rust-sdk crates/rmcp/src/transport/auth.rs), which Codex and Goose run. */
const RMCP_DISCOVERY: HostProfile['discovery'] = {
  probe: 'GET',
  headers: { 'MCP-Protocol-Version': '2024-11-05' },
  resourceMetadata: ['challenge-same-origin', 'path', 'path-appended', 'root'],
  resourceRule: 'url-or-parent-strict',
  authorizationServerMetadata: ['oauth-path', 'oidc-path', 'oidc-appended', 'oauth-root'],
  checksIssuer: true,
};
const RMCP_SOURCE = 'https://github.com/modelcontextprotocol/rust-sdk/blob/main/crates/rmcp/src/transport/auth.rs';

/** A host whose discovery is not public: what the MCP specification asks (the 401's metadata, then the well-known forms). */
const SPECIFICATION_DISCOVERY: HostProfile['discovery'] = {
  probe: 'POST initialize',
  resourceMetadata: ['challenge', 'path', 'root'],
  resourceRule: 'unchecked',
  authorizationServerMetadata: ['oauth-path', 'oidc-path'],
  checksIssuer: false,
};

const CHATGPT_DOCUMENT = {
  client_id: 'https://chatgpt.com/oauth/client.json',
  client_name: 'ChatGPT',
  client_uri: 'https://chatgpt.com/',
  redirect_uris: ['https://chatgpt.com/connector_platform_oauth_redirect'],
  grant_types: GRANTS,
  response_types: ['code'],
  token_endpoint_auth_method: 'private_key_jwt',
  token_endpoint_auth_methods_supported: ['none', 'private_key_jwt'],
  token_endpoint_auth_signing_alg: 'RS256',
  jwks_uri: 'https://chatgpt.com/oauth/jwks.json',
};
const CHATGPT_SOURCES = [
  'https://github.com/Altinity/altinity-mcp/issues/118',
  'https://github.com/Altinity/altinity-mcp/pull/119',
  'https://github.com/tableau/tableau-mcp/issues/814',
];
const CHATGPT_UNKNOWNS =
  'ChatGPT runs in its cloud; its code is not public. The document is the stable one it uses with a server that advertises RFC 9207 iss (otherwise https://chatgpt.com/oauth/<callback-id>/client.json, redirect https://chatgpt.com/connector/oauth/<callback-id>). Its resource on token requests and its refresh parameters are not public, nor is the aud of its client assertion: recorded here as the issuer identifier, which is what RFC 7523bis asks for (a server that accepts only the token endpoint URL there refuses it, and one that accepts only the issuer refuses an assertion addressed to the token endpoint).';

const CLAUDE_CALLBACK = 'https://claude.ai/api/mcp/auth_callback';
const CLAUDE_UNKNOWNS =
  'claude.ai (and Claude Desktop, whose connectors run through it) is not public code: its resource rule, its token and refresh parameters and its state are not public.';

const CLAUDE_CODE_SOURCES = [
  'https://github.com/anthropics/claude-code/issues/37747',
  'https://github.com/anthropics/claude-code/issues/44429',
  'https://github.com/anthropics/claude-code/issues/94630',
  'https://github.com/anthropics/claude-code/issues/85236',
  'https://github.com/anthropics/claude-code/issues/66210',
];

const CODEX_SOURCES = [
  'https://github.com/openai/codex/blob/main/codex-rs/rmcp-client/src/oauth_client_registration.rs',
  'https://github.com/openai/codex/blob/main/codex-rs/rmcp-client/src/perform_oauth_login.rs',
  RMCP_SOURCE,
];

const VSCODE_SOURCES = [
  'https://github.com/microsoft/vscode/blob/main/src/vs/base/common/oauth.ts',
  'https://github.com/microsoft/vscode/blob/main/src/vs/workbench/api/common/extHostAuthentication.ts',
];
const VSCODE_DISCOVERY: HostProfile['discovery'] = {
  probe: 'POST initialize',
  resourceMetadata: ['challenge', 'path', 'root'],
  resourceRule: 'same-url',
  authorizationServerMetadata: ['oauth-path', 'oidc-path', 'oidc-appended'],
  checksIssuer: false,
};
const VSCODE_AUTHORIZATION: HostProfile['authorization'] = { scope: 'resource', resource: 'metadata-resource', state: 'unknown', iss: 'ignored' };
const VSCODE_TOKEN: HostProfile['token'] = { resource: 'absent', clientAuthentication: 'none' };
const VSCODE_REFRESH: HostProfile['refresh'] = { resource: 'absent', scope: 'absent', onInvalidClient: 're-register' };

const GOOSE_SOURCES = ['https://github.com/block/goose/blob/main/crates/goose/src/oauth/mod.rs', RMCP_SOURCE];
const RMCP_AUTHORIZATION: HostProfile['authorization'] = {
  scope: 'challenge-and-resource-else-server-plus-offline',
  resource: 'metadata-resource',
  state: 'base64url',
  iss: 'required',
};
const RMCP_TOKEN: HostProfile['token'] = { resource: 'metadata-resource', clientAuthentication: 'none' };

export const HOST_PROFILES: readonly HostProfile[] = [
  {
    id: 'chatgpt-private-key-jwt',
    host: 'ChatGPT',
    way: 'document',
    sources: CHATGPT_SOURCES,
    when: { clientIdMetadataDocuments: true, authMethodsListed: ['private_key_jwt'] },
    reachesFromCloud: true,
    discovery: { ...SPECIFICATION_DISCOVERY, resourceMetadata: ['path'] },
    registration: { kind: 'document', url: CHATGPT_DOCUMENT.client_id, document: CHATGPT_DOCUMENT, recorded: true },
    redirect: { uri: 'https://chatgpt.com/connector_platform_oauth_redirect', listens: false },
    authorization: { scope: 'resource-openid-and-offline', resource: 'metadata-resource', state: 'unknown', iss: 'ignored' },
    token: { resource: 'metadata-resource', clientAuthentication: 'private_key_jwt', signingAlgorithm: 'RS256' },
    refresh: { resource: 'metadata-resource', scope: 'absent' },
    unknowns: CHATGPT_UNKNOWNS,
  },
  {
    id: 'chatgpt-public-client',
    host: 'ChatGPT',
    way: 'document',
    sources: CHATGPT_SOURCES,
    when: { clientIdMetadataDocuments: true, authMethodsListed: ['none'], authMethodsNotListed: ['private_key_jwt'] },
    reachesFromCloud: true,
    discovery: { ...SPECIFICATION_DISCOVERY, resourceMetadata: ['path'] },
    registration: { kind: 'document', url: CHATGPT_DOCUMENT.client_id, document: CHATGPT_DOCUMENT, recorded: true },
    redirect: { uri: 'https://chatgpt.com/connector_platform_oauth_redirect', listens: false },
    authorization: { scope: 'resource-openid-and-offline', resource: 'metadata-resource', state: 'unknown', iss: 'ignored' },
    token: { resource: 'metadata-resource', clientAuthentication: 'none' },
    refresh: { resource: 'metadata-resource', scope: 'absent' },
    unknowns: `${CHATGPT_UNKNOWNS} Where the server lists none and not private_key_jwt, ChatGPT sends no client assertion.`,
  },
  {
    id: 'claude-document',
    host: 'Claude',
    way: 'document',
    sources: ['https://github.com/anthropics/claude-ai-mcp/issues/1043', 'https://github.com/PostHog/posthog/issues/48397'],
    when: { clientIdMetadataDocuments: true, authMethodsListed: ['none'] },
    reachesFromCloud: true,
    discovery: SPECIFICATION_DISCOVERY,
    registration: {
      kind: 'document',
      url: 'https://claude.ai/oauth/mcp-oauth-client-metadata',
      document: {
        client_id: 'https://claude.ai/oauth/mcp-oauth-client-metadata',
        client_name: 'Claude',
        client_uri: 'https://claude.ai',
        redirect_uris: [CLAUDE_CALLBACK],
        grant_types: [...GRANTS, 'urn:ietf:params:oauth:grant-type:jwt-bearer'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      },
      recorded: true,
    },
    redirect: { uri: CLAUDE_CALLBACK, listens: false },
    authorization: { scope: 'challenge-else-resource-plus-offline', resource: 'metadata-resource', state: 'unknown', iss: 'ignored' },
    token: { resource: 'metadata-resource', clientAuthentication: 'none' },
    refresh: { resource: 'metadata-resource', scope: 'absent', earlySeconds: 300 },
    unknowns: CLAUDE_UNKNOWNS,
  },
  {
    id: 'claude-registration',
    host: 'Claude',
    way: 'registration',
    sources: ['https://github.com/PostHog/posthog/issues/48397', 'https://github.com/anthropics/claude-ai-mcp/issues/1043'],
    reachesFromCloud: true,
    discovery: SPECIFICATION_DISCOVERY,
    registration: {
      kind: 'dynamic',
      body: {
        client_name: 'Claude',
        redirect_uris: [CLAUDE_CALLBACK],
        grant_types: GRANTS,
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    },
    redirect: { uri: CLAUDE_CALLBACK, listens: false },
    authorization: { scope: 'challenge-else-resource-plus-offline', resource: 'metadata-resource', state: 'unknown', iss: 'ignored' },
    token: { resource: 'metadata-resource', clientAuthentication: 'client_secret_post' },
    refresh: { resource: 'metadata-resource', scope: 'absent', earlySeconds: 300 },
    unknowns: CLAUDE_UNKNOWNS,
  },
  {
    id: 'claude-code-document',
    host: 'Claude Code',
    way: 'document',
    sources: CLAUDE_CODE_SOURCES,
    when: { clientIdMetadataDocuments: true, authMethodsListed: ['none'] },
    discovery: { ...MCP_SDK_DISCOVERY, headers: {} },
    registration: {
      kind: 'document',
      url: 'https://claude.ai/oauth/claude-code-client-metadata',
      document: {
        client_id: 'https://claude.ai/oauth/claude-code-client-metadata',
        client_name: 'Claude Code',
        redirect_uris: ['http://localhost/callback', 'http://127.0.0.1/callback'],
        grant_types: GRANTS,
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      },
      recorded: true,
    },
    redirect: { uri: 'http://localhost:{port}/callback', port: 'random', listens: true },
    authorization: { scope: 'challenge-else-resource', resource: 'metadata-resource', state: 'unknown', iss: 'required' },
    token: { resource: 'metadata-resource', clientAuthentication: 'none' },
    refresh: { resource: 'metadata-resource', scope: 'absent', concurrentSessions: 2 },
    unknowns: 'Claude Code is not public code: its discovery is taken to be the MCP SDK\u2019s; its state and token parameters are not public.',
  },
  {
    id: 'claude-code-registration',
    host: 'Claude Code',
    way: 'registration',
    sources: CLAUDE_CODE_SOURCES,
    discovery: { ...MCP_SDK_DISCOVERY, headers: {} },
    registration: {
      kind: 'dynamic',
      body: {
        client_name: 'Claude Code ({server})',
        redirect_uris: ['http://localhost:{port}/callback'],
        grant_types: GRANTS,
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      },
    },
    redirect: { uri: 'http://localhost:{port}/callback', port: 'random', listens: true },
    authorization: { scope: 'challenge-else-resource', resource: 'metadata-resource', state: 'unknown', iss: 'required' },
    token: { resource: 'metadata-resource', clientAuthentication: 'none' },
    refresh: { resource: 'metadata-resource', scope: 'absent', concurrentSessions: 2 },
    unknowns: 'Claude Code is not public code: its discovery is taken to be the MCP SDK\u2019s; its state and token parameters are not public.',
  },
  {
    id: 'cursor-registration',
    host: 'Cursor',
    way: 'registration',
    sources: [
      'https://github.com/soflyy/agent-connector-for-wp/issues/111',
      'https://github.com/makeplane/plane-mcp-server/issues/159',
      'https://github.com/modelcontextprotocol/python-sdk/issues/897',
      'https://github.com/bytebase/bytebase/issues/20510',
    ],
    discovery: SPECIFICATION_DISCOVERY,
    registration: {
      kind: 'dynamic',
      body: {
        redirect_uris: ['cursor://anysphere.cursor-mcp/oauth/callback', 'https://www.cursor.com/agents/mcp/oauth/callback', 'http://localhost:8787/callback'],
        grant_types: GRANTS,
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      },
    },
    redirect: { uri: 'cursor://anysphere.cursor-mcp/oauth/callback', listens: false },
    authorization: { scope: 'challenge-else-resource', resource: 'metadata-resource', state: 'unknown', iss: 'ignored' },
    token: { resource: 'metadata-resource', clientAuthentication: 'none' },
    refresh: { resource: 'metadata-resource', scope: 'absent' },
    unknowns:
      'Cursor is not public code: which of its three redirect URIs it uses is not public (the private-use one is taken here), nor its client_name, discovery or token parameters.',
  },
  {
    id: 'vscode-document',
    host: 'VS Code',
    way: 'document',
    sources: VSCODE_SOURCES,
    when: { clientIdMetadataDocuments: true },
    discovery: VSCODE_DISCOVERY,
    registration: {
      kind: 'document',
      url: 'https://vscode.dev/oauth/client-metadata.json',
      document: {
        client_id: 'https://vscode.dev/oauth/client-metadata.json',
        client_name: 'Visual Studio Code',
        client_uri: 'https://code.visualstudio.com',
        redirect_uris: ['http://127.0.0.1:33418/', 'https://vscode.dev/redirect'],
        grant_types: [...GRANTS, 'urn:ietf:params:oauth:grant-type:device_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        application_type: 'native',
      },
      recorded: true,
    },
    redirect: { uri: 'http://127.0.0.1:33418/', port: 'fixed', listens: true },
    authorization: VSCODE_AUTHORIZATION,
    token: VSCODE_TOKEN,
    refresh: VSCODE_REFRESH,
    unknowns: 'When port 33418 is taken VS Code listens on another loopback port.',
  },
  {
    id: 'vscode-registration',
    host: 'VS Code',
    way: 'registration',
    sources: VSCODE_SOURCES,
    discovery: VSCODE_DISCOVERY,
    registration: {
      kind: 'dynamic',
      body: {
        client_name: 'Visual Studio Code',
        client_uri: 'https://code.visualstudio.com',
        grant_types: [...GRANTS, 'urn:ietf:params:oauth:grant-type:device_code'],
        response_types: ['code'],
        redirect_uris: ['https://insiders.vscode.dev/redirect', 'https://vscode.dev/redirect', 'http://127.0.0.1/', 'http://127.0.0.1:33418/'],
        token_endpoint_auth_method: 'none',
        application_type: 'native',
      },
      sendsScope: 'when-any',
      grantTypesFromServer: [...GRANTS, 'urn:ietf:params:oauth:grant-type:device_code'],
    },
    redirect: { uri: 'http://127.0.0.1:33418/', port: 'fixed', listens: true },
    authorization: VSCODE_AUTHORIZATION,
    token: VSCODE_TOKEN,
    refresh: VSCODE_REFRESH,
    unknowns: 'When port 33418 is taken VS Code listens on another loopback port.',
  },
  {
    id: 'copilot-cli-document',
    host: 'Copilot CLI',
    way: 'document',
    sources: ['https://github.com/github/copilot-cli/issues/4793'],
    when: { clientIdMetadataDocuments: true },
    discovery: SPECIFICATION_DISCOVERY,
    registration: {
      kind: 'document',
      url: 'https://github.com/copilot/cli/client-metadata.json',
      document: {
        client_id: 'https://github.com/copilot/cli/client-metadata.json',
        client_name: 'GitHub Copilot CLI',
        redirect_uris: ['http://127.0.0.1:33418/'],
        grant_types: GRANTS,
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        application_type: 'native',
      },
      recorded: false,
    },
    redirect: { uri: 'http://127.0.0.1:{port}/', port: 'random', listens: true },
    authorization: { scope: 'challenge-else-resource', resource: 'metadata-resource', state: 'unknown', iss: 'ignored' },
    token: { resource: 'metadata-resource', clientAuthentication: 'none' },
    refresh: { resource: 'metadata-resource', scope: 'absent' },
    unknowns:
      'Copilot CLI is not public code: its document is known by its URL, native type and redirect URI only; it listens on an ephemeral port (the source above).',
  },
  {
    id: 'codex-document',
    host: 'Codex',
    way: 'document',
    sources: CODEX_SOURCES,
    when: { clientIdMetadataDocuments: true, authMethodsListed: ['none'] },
    discovery: RMCP_DISCOVERY,
    registration: {
      kind: 'document',
      url: 'https://chatgpt.com/oauth/codex/client.json',
      document: {
        client_id: 'https://chatgpt.com/oauth/codex/client.json',
        client_name: 'Codex',
        redirect_uris: ['http://127.0.0.1/callback', 'http://localhost/callback'],
        grant_types: GRANTS,
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        application_type: 'native',
      },
      recorded: false,
    },
    redirect: { uri: 'http://127.0.0.1:{port}/callback', port: 'random', listens: true },
    authorization: RMCP_AUTHORIZATION,
    token: RMCP_TOKEN,
    refresh: { resource: 'metadata-resource', scope: 'granted', concurrentSessions: 2 },
    unknowns:
      'The document body is what Codex\u2019s redirect checks imply (a loopback /callback on any port); with a server that does not advertise RFC 9207 iss Codex uses https://chatgpt.com/oauth/codex/{callback_id}/client.json and /callback/{callback_id}.',
  },
  {
    id: 'codex-registration',
    host: 'Codex',
    way: 'registration',
    sources: CODEX_SOURCES,
    discovery: RMCP_DISCOVERY,
    registration: {
      kind: 'dynamic',
      body: {
        client_name: 'Codex',
        redirect_uris: ['http://127.0.0.1:{port}/callback'],
        grant_types: GRANTS,
        token_endpoint_auth_method: 'none',
        response_types: ['code'],
        application_type: 'native',
      },
      sendsScope: 'when-any',
    },
    redirect: { uri: 'http://127.0.0.1:{port}/callback', port: 'random', listens: true },
    authorization: RMCP_AUTHORIZATION,
    token: RMCP_TOKEN,
    refresh: { resource: 'metadata-resource', scope: 'granted', concurrentSessions: 2 },
    unknowns: 'With a server that does not advertise RFC 9207 iss the redirect path is /callback/{callback_id}.',
  },
  {
    id: 'gemini-cli-registration',
    host: 'Gemini CLI',
    way: 'registration',
    sources: [
      'https://github.com/google-gemini/gemini-cli/blob/main/packages/core/src/mcp/oauth-provider.ts',
      'https://github.com/google-gemini/gemini-cli/blob/main/packages/core/src/mcp/oauth-utils.ts',
      'https://github.com/google-gemini/gemini-cli/blob/main/packages/core/src/utils/oauth-flow.ts',
    ],
    discovery: {
      probe: 'HEAD',
      headers: { Accept: 'application/json' },
      resourceMetadata: ['challenge', 'path', 'root'],
      resourceRule: 'same-origin-and-path',
      authorizationServerMetadata: ['oauth-path', 'oidc-path', 'oidc-appended', 'oauth-root', 'oidc-root'],
      checksIssuer: false,
    },
    registration: {
      kind: 'dynamic',
      body: {
        client_name: 'Gemini CLI MCP Client',
        redirect_uris: ['http://localhost:{port}/oauth/callback'],
        grant_types: GRANTS,
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      },
      sendsScope: 'always',
    },
    redirect: { uri: 'http://localhost:{port}/oauth/callback', port: 'random', listens: true },
    authorization: { scope: 'server', resource: 'typed-url', state: 'base64url', iss: 'ignored' },
    token: { resource: 'typed-url', clientAuthentication: 'none' },
    refresh: { resource: 'typed-url', scope: 'requested' },
  },
  {
    id: 'goose-document',
    host: 'Goose',
    way: 'document',
    sources: GOOSE_SOURCES,
    when: { clientIdMetadataDocuments: true },
    discovery: RMCP_DISCOVERY,
    registration: {
      kind: 'document',
      url: 'https://goose-docs.ai/oauth/client-metadata.json',
      document: {
        client_id: 'https://goose-docs.ai/oauth/client-metadata.json',
        client_name: 'goose',
        redirect_uris: ['http://127.0.0.1/oauth_callback'],
        grant_types: GRANTS,
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        application_type: 'native',
      },
      recorded: false,
    },
    redirect: { uri: 'http://127.0.0.1:{port}/oauth_callback', port: 'random', listens: true },
    authorization: RMCP_AUTHORIZATION,
    token: RMCP_TOKEN,
    refresh: { resource: 'metadata-resource', scope: 'granted', onInvalidClient: 're-register' },
    unknowns:
      'The document body is what Goose\u2019s redirect implies (http://127.0.0.1 on any port, /oauth_callback, a public client). Goose refreshes at start-up.',
  },
  {
    id: 'goose-registration',
    host: 'Goose',
    way: 'registration',
    sources: GOOSE_SOURCES,
    discovery: RMCP_DISCOVERY,
    registration: {
      kind: 'dynamic',
      body: {
        client_name: 'goose',
        redirect_uris: ['http://127.0.0.1:{port}/oauth_callback'],
        grant_types: GRANTS,
        token_endpoint_auth_method: 'none',
        response_types: ['code'],
        application_type: 'native',
      },
      sendsScope: 'when-any',
    },
    redirect: { uri: 'http://127.0.0.1:{port}/oauth_callback', port: 'random', listens: true },
    authorization: RMCP_AUTHORIZATION,
    token: RMCP_TOKEN,
    refresh: { resource: 'metadata-resource', scope: 'granted', onInvalidClient: 're-register' },
    unknowns: 'Goose refreshes at start-up, and registers again when a refresh fails.',
  },
  {
    id: 'mcp-remote-registration',
    host: 'mcp-remote',
    way: 'registration',
    sources: [
      'https://github.com/geelen/mcp-remote/blob/main/src/lib/node-oauth-client-provider.ts',
      'https://github.com/geelen/mcp-remote/blob/main/src/lib/utils.ts',
    ],
    requiresHttps: true,
    discovery: MCP_SDK_DISCOVERY,
    registration: {
      kind: 'dynamic',
      body: {
        redirect_uris: ['http://localhost:{port}/oauth/callback'],
        token_endpoint_auth_method: 'none',
        grant_types: GRANTS,
        response_types: ['code'],
        client_name: 'MCP CLI Client',
        client_uri: 'https://github.com/modelcontextprotocol/mcp-cli',
        software_id: '2e6dc280-f3c3-4e01-99a7-8181dbd1d23d',
        software_version: '0.1.38',
      },
      sendsScope: 'when-any',
    },
    redirect: { uri: 'http://localhost:{port}/oauth/callback', port: 'fixed', listens: true },
    authorization: { scope: 'challenge-resource-server-else-openid', resource: 'metadata-resource', state: 'uuid', iss: 'ignored' },
    token: { resource: 'metadata-resource', clientAuthentication: 'none' },
    refresh: { resource: 'metadata-resource', scope: 'absent', onInvalidClient: 're-register' },
    unknowns: 'Its port comes from a hash of the server URL; when that port is taken it listens on another.',
  },
  {
    id: 'mcp-inspector-registration',
    host: 'MCP Inspector',
    way: 'registration',
    sources: ['https://github.com/modelcontextprotocol/inspector/blob/main/client/src/lib/auth.ts'],
    browserOrigin: 'http://localhost:6274',
    discovery: MCP_SDK_DISCOVERY,
    registration: {
      kind: 'dynamic',
      body: {
        redirect_uris: ['http://localhost:6274/oauth/callback', 'http://localhost:6274/oauth/callback/debug'],
        token_endpoint_auth_method: 'none',
        grant_types: GRANTS,
        response_types: ['code'],
        client_name: 'MCP Inspector',
        client_uri: 'https://github.com/modelcontextprotocol/inspector',
      },
      sendsScope: 'always',
    },
    redirect: { uri: 'http://localhost:6274/oauth/callback', port: 'fixed', listens: false },
    authorization: { scope: 'resource-else-server', resource: 'metadata-resource', state: 'unknown', iss: 'ignored' },
    token: { resource: 'metadata-resource', clientAuthentication: 'none' },
    refresh: { resource: 'metadata-resource', scope: 'absent' },
    unknowns: 'Its callback is a page of its own app (the code is redeemed by the page), so nothing listens there but the Inspector.',
  },
];

/** The hosts, in the order of HOST_PROFILES. */
export function hostNames(profiles: readonly HostProfile[] = HOST_PROFILES): string[] {
  return [...new Set(profiles.map((profile) => profile.host))];
}
