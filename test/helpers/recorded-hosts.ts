/**
 * What real MCP hosts send when they register or describe themselves, as recorded from their
 * public sources (late 2026). Only what a test cannot serve as the host does is replaced: a
 * document's own URL (`client_id`), and the `jwks_uri` it names, served on 127.0.0.1 in tests.
 */

/** Cursor's dynamic registration: one request, three redirect URIs, a public client. */
export const CURSOR_REGISTRATION = {
  redirect_uris: ['cursor://anysphere.cursor-mcp/oauth/callback', 'https://www.cursor.com/agents/mcp/oauth/callback', 'http://localhost:8787/callback'],
  token_endpoint_auth_method: 'none',
} as const;

export const CLAUDE_AI_REDIRECT_URI = 'https://claude.ai/api/mcp/auth_callback';

/** claude.ai's client ID metadata document (served at https://claude.ai/oauth/mcp-oauth-client-metadata). */
export function claudeAiDocument(clientId: string): Record<string, unknown> {
  return {
    client_id: clientId,
    client_name: 'Claude',
    client_uri: 'https://claude.ai',
    redirect_uris: [CLAUDE_AI_REDIRECT_URI],
    grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:jwt-bearer'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
}

export const CHATGPT_REDIRECT_URI = 'https://chatgpt.com/connector_platform_oauth_redirect';

/** ChatGPT's client ID metadata document (served at https://chatgpt.com/oauth/client.json; its keys at https://chatgpt.com/oauth/jwks.json). */
export function chatGptDocument(clientId: string, jwksUri: string): Record<string, unknown> {
  return {
    client_id: clientId,
    client_uri: 'https://chatgpt.com/',
    redirect_uris: [CHATGPT_REDIRECT_URI],
    token_endpoint_auth_method: 'private_key_jwt',
    token_endpoint_auth_methods_supported: ['none', 'private_key_jwt'],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    client_name: 'ChatGPT',
    logo_uri: 'https://persistent.oaistatic.com/sonic/misc/openai-logo.png',
    token_endpoint_auth_signing_alg: 'RS256',
    jwks_uri: jwksUri,
  };
}
