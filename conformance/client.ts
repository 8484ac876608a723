/**
 * The entry the MCP conformance runner calls (`npm run conformance:client -- <server-url>`): our
 * client library behind the official SDK's Streamable HTTP transport, with a headless "person"
 * who approves whatever the authorization server shows, and a store that lasts one run. The SDK v2
 * client negotiates the era: it probes with `server/discover` (2026-07-28, no initialize) and falls
 * back to `initialize` for a 2025-era server; either first request may be the one that meets the 401.
 *
 * The runner appends the server URL as the last argument and sets MCP_CONFORMANCE_SCENARIO;
 * MCP_CONFORMANCE_CONTEXT carries a pre-registered client where a scenario has one (its secret, or
 * for private_key_jwt its PEM private key and algorithm), and for the jwt-bearer scenarios what to
 * assert: a workload's JWT, or the person's ID token at an identity provider to exchange for an ID-JAG.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { ContextClient, enterpriseAssertion, MemoryTokenStore, type ContextClientOptions } from '../src/client/index.js';

/** The client ID metadata document URL the conformance scenarios expect a client to offer. */
const CLIENT_METADATA_URL = 'https://conformance-test.local/client-metadata.json';

interface ConformanceContext {
  client_id?: string;
  client_secret?: string;
  private_key_pem?: string;
  signing_algorithm?: string;
  /** Workload identity federation: a JWT whose audience is the authorization server. */
  valid_jwt?: string;
  /** Enterprise-managed authorization: the person's ID token and our client at their identity provider. */
  idp_id_token?: string;
  idp_issuer?: string;
  idp_client_id?: string;
}

const serverUrl = process.argv.at(-1);
if (!serverUrl || !URL.canParse(serverUrl)) {
  console.error('usage: conformance/client.ts <server-url>');
  process.exit(2);
}
const context = process.env.MCP_CONFORMANCE_CONTEXT ? (JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT) as ConformanceContext) : {};
/** The client credentials scenarios (SEP-1046): a program with a secret or a private key, no person. */
const clientCredentials = process.env.MCP_CONFORMANCE_SCENARIO?.startsWith('auth/client-credentials') === true;

/** The jwt-bearer scenarios (SEP-1933, SEP-990): the workload's JWT as it is, or an ID-JAG from the identity provider. */
function jwtBearer(): Partial<ContextClientOptions> {
  if (context.valid_jwt) {
    const jwt = context.valid_jwt;
    return { grantType: 'jwt-bearer', assertion: () => jwt };
  }
  if (context.idp_id_token && context.idp_issuer && context.idp_client_id) {
    return {
      grantType: 'jwt-bearer',
      assertion: enterpriseAssertion({ issuer: context.idp_issuer, clientId: context.idp_client_id, idToken: context.idp_id_token }),
    };
  }
  return clientCredentials ? { grantType: 'client_credentials' } : {};
}

/** Plays the person: opens the authorization URL, and follows its redirect to our loopback callback. */
async function approveHeadlessly(url: URL): Promise<void> {
  const response = await fetch(url, { redirect: 'manual' });
  const location = response.headers.get('location');
  if (!location) throw new Error(`the authorization endpoint answered ${response.status} without a redirect`);
  await fetch(new URL(location, url));
}

const auth = new ContextClient({
  serverUrl,
  store: new MemoryTokenStore(),
  clientName: 'context-auth conformance client',
  clientMetadataUrl: CLIENT_METADATA_URL,
  ...(context.client_id ? { clientId: context.client_id } : {}),
  ...(context.client_secret ? { clientSecret: context.client_secret } : {}),
  ...jwtBearer(),
  ...(context.private_key_pem ? { privateKey: context.private_key_pem } : {}),
  ...(context.signing_algorithm ? { privateKeyAlg: context.signing_algorithm } : {}),
  openAuthorizationUrl: approveHeadlessly,
  onProgress: (message) => console.error(`[context-auth] ${message}`),
});

const client = new Client({ name: 'context-auth-conformance', version: '0.1.0' }, { capabilities: {}, versionNegotiation: { mode: 'auto' } });
const transport = new StreamableHTTPClientTransport(new URL(serverUrl), { fetch: auth.fetch });
try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  for (const tool of tools) await client.callTool({ name: tool.name, arguments: {} });
  await transport.close();
  process.exit(0);
} catch (error) {
  console.error(`[context-auth] ${(error as Error).message}`);
  process.exit(1);
}
